"""`burnish report DIR [-o FILE]`: the page's content, and the page as Chromium renders it.

Chromium runs headless in a network namespace of its own when `unshare -n` works (so neither
the page nor the browser's own background services can reach anything), else with every host
name mapped to "not found". Console messages are read from Chromium's log on stderr
(`--enable-logging=stderr`: one `CONSOLE` line per message, whatever its level): the report
has no script, so any message at all (a script error, a blocked resource, a CSP report) is a
failure. A canary page with a deliberate error proves this detection works on the Chromium at
hand. Resource loads are checked statically: the page references nothing outside itself.
"""

import html.parser
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from burnish.train import LearnerSummary

from tests.cli.helpers import burnish

CONSOLE = re.compile(r":CONSOLE[(:]\d+")
TRAIN_RGB, VALID_RGB = (0x1F, 0x77, 0xB4), (0xE8, 0x59, 0x0C)


@pytest.fixture
def run(run_dir, tmp_path):
    return shutil.copytree(run_dir, tmp_path / "run")


def test_report_writes_one_self_contained_page(run):
    result = burnish("report", run)
    assert result.returncode == 0, result.stderr
    page_path = run / "report.html"
    assert result.stdout.startswith(f"Wrote {page_path} (") and result.stderr == ""
    page = page_path.read_text()
    assert_self_contained(page)
    summary = LearnerSummary.from_dir(run)
    for metric in ("Accuracy", "Loss"):
        assert f"<h3>{metric}</h3>" in page
    assert page.count("<svg") == 2 and page.count("<polyline") >= 2 * 2 * 2 + 2
    for metric in summary.metrics.train + summary.metrics.valid:
        assert f"{metric.entries[-1].value:.4g}" in page  # the summary table's last values
    config = json.loads((run / "config.json").read_text())
    assert f"&quot;hidden_size&quot;: {config['hidden_size']}" in page
    checkpoints = sorted(path.name for path in (run / "checkpoint").iterdir())
    assert checkpoints == ["epoch-2", "epoch-3"]  # the learner keeps the last two
    for name in checkpoints:
        size = sum(file.stat().st_size for file in (run / "checkpoint" / name).iterdir())
        assert f'<td>{name}</td><td class="num">{name[-1]}</td>' in page
        assert f"{size / 1024:.1f} KiB" in page
    assert "From model.mpk" in page and "encoder" in page  # the model summary


def test_report_to_another_file(run, tmp_path):
    result = burnish("report", run, "-o", tmp_path / "page.html", module=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "page.html").is_file() and not (run / "report.html").exists()


def test_the_page_renders_in_chromium_without_console_messages(run, tmp_path, chromium_binary):
    canary = tmp_path / "canary.html"
    canary.write_text("<!DOCTYPE html><p>canary</p><script>console.error('canary');</script>")
    messages, _ = render(chromium_binary, canary, tmp_path / "canary.png")
    assert any("canary" in line for line in messages), "console messages are not detected"

    assert burnish("report", run).returncode == 0
    messages, screenshot = render(chromium_binary, run / "report.html", tmp_path / "report.png")
    assert messages == []
    from PIL import Image

    with Image.open(screenshot) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16).reshape(-1, 3)
    ink = int((pixels.min(axis=1) < 200).sum())
    assert ink > 0.01 * len(pixels), f"the screenshot is blank: {ink} dark pixels"
    for color in (TRAIN_RGB, VALID_RGB):  # both splits' curves were drawn
        near = int((np.abs(pixels - np.array(color)).max(axis=1) < 40).sum())
        assert near > 200, f"too few pixels of the curve color {color}: {near}"


def render(binary, page, screenshot):
    """Screenshot `page` with headless Chromium: (console message lines, the PNG's path)."""
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={screenshot.parent / 'chromium-profile'}",
        "--enable-logging=stderr", "--v=0", "--window-size=1280,1800",
        f"--screenshot={screenshot}", page.as_uri(),
    ]  # fmt: skip
    isolated = shutil.which("unshare") and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True
    ).returncode == 0  # fmt: skip
    prefix = ["unshare", "-n"] if isolated else []
    result = subprocess.run([*prefix, binary, *flags], capture_output=True, text=True, timeout=120)
    assert screenshot.is_file(), f"Chromium wrote no screenshot: {result.stderr[-2000:]}"
    return [line for line in result.stderr.splitlines() if CONSOLE.search(line)], screenshot


def assert_self_contained(page):
    """No script, no external resource: nothing to fetch, nothing to run."""

    class Checker(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            assert tag not in ("script", "link", "img", "iframe", "object", "embed", "base")
            for name, _ in attrs:
                assert name not in ("src", "href", "srcset", "action", "xlink:href", "poster")
                assert not name.startswith("on"), f"event handler {name}"

    Checker().feed(page)
    style = page[page.index("<style>") : page.index("</style>")]
    assert "url(" not in style and "@import" not in style


def test_report_of_a_run_with_a_constant_learning_rate(constant_lr_run_dir, tmp_path):
    """The epoch means of a constant 0.1 differ by one ulp: the report used to loop forever."""
    means = LearnerSummary.from_dir(constant_lr_run_dir).metrics.train
    learning_rate = next(m for m in means if m.name == "Learning Rate")
    assert {e.value for e in learning_rate.entries} != {0.1}  # the case that hung
    result = burnish("report", constant_lr_run_dir, "-o", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    assert_self_contained(page)
    assert "<h3>Learning Rate</h3>" in page and page.count("<svg") == 3
    chart = page[page.index("<h3>Learning Rate</h3>") :].split("</svg>")[0]
    assert re.findall(r'text-anchor="end" class="tick">([^<]*)<', chart) == [
        "0.09", "0.095", "0.1", "0.105", "0.11"
    ]  # fmt: skip
