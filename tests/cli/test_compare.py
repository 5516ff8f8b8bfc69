"""`burnish report DIR DIR ...` and `burnish summary DIR DIR ...`: several runs side by side.

Three real runs: `run` (3 epochs, lr 0.01, hidden 16), `other` (2 epochs, lr 0.05, hidden 8,
`Learning Rate` logged, an evaluation "Held out") and `constant-lr` (3 epochs, lr 0.1,
`Learning Rate` logged): different epoch counts, metric sets and configs.
"""

import json
import re
import shutil
from pathlib import Path

import numpy as np

from burnish.cli import main
from burnish.cli.compare import run_names
from burnish.cli.compare_page import run_colors
from burnish.cli.html import number
from burnish.train import LearnerSummary

from tests.cli.helpers import burnish
from tests.cli.test_report import assert_self_contained, render


def final(directory: Path, split: str, metric: str) -> float:
    summary = LearnerSummary.from_dir(directory)
    metrics = summary.metrics.test["held-out"] if split == "test" else (
        getattr(summary.metrics, split)
    )  # fmt: skip
    return next(m for m in metrics if m.name == metric).entries[-1].value


def section(page: str, title: str) -> str:
    start = page.index(f"<h2>{title}</h2>")
    end = page.find("<h2>", start + 1)
    return page[start : end if end != -1 else len(page)]


def test_report_of_several_runs_overlays_tabulates_and_diffs(run_dir, other_run_dir, tmp_path):
    output = tmp_path / "compare.html"
    result = burnish("report", run_dir, other_run_dir, "-o", output)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Wrote {output} (") and result.stderr == ""
    page = output.read_text()
    assert_self_contained(page)
    assert "<h1>Run comparison: 2 runs</h1>" in page
    blue, orange = run_colors(2)
    # One chart per metric and split, one series per run that logged it, legend by run name.
    for title in ("Accuracy · train", "Accuracy · valid", "Loss · train", "Loss · valid"):
        chart = section(page, "Metrics").split(f"<h3>{title}</h3>")[1].split("</svg>")[0]
        assert re.findall(r'class="legend">([^<]*)<', chart) == ["run", "other"]
        assert f'stroke="{blue}" stroke-width="2.25"' in chart  # each run's epoch values
        assert f'stroke="{orange}" stroke-width="2.25"' in chart
        assert chart.count("<circle") == 3 + 2  # 3 epochs of `run`, 2 of `other`
    rate = section(page, "Metrics").split("<h3>Learning Rate · train</h3>")[1].split("</div>")[0]
    assert re.findall(r'class="legend">([^<]*)<', rate) == ["other"]
    assert "Not logged by: run" in rate
    # The values side by side: final and best per run, missing where a run has none.
    values = section(page, "Final and best values")
    rows = {
        tuple(re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)[:2]): row
        for row in re.findall(r"<tr>(.*?)</tr>", values)
        if "<td" in row
    }
    assert set(rows) == {("Train", "Accuracy"), ("Train", "Loss"), ("Train", "Learning Rate"),
                         ("Valid", "Accuracy"), ("Valid", "Loss"),
                         ("Test (held-out)", "Accuracy"), ("Test (held-out)", "Loss")}  # fmt: skip
    loss = rows[("Valid", "Loss")].replace("<b>", "").replace("</b>", "")
    assert f"{number(final(run_dir, 'valid', 'Loss'))} <small>(epoch 3)</small>" in loss
    assert f"{number(final(other_run_dir, 'valid', 'Loss'))} <small>(epoch 2)</small>" in loss
    for evaluation in ("Accuracy", "Loss"):
        row = rows[("Test (held-out)", evaluation)]
        assert row.count(">missing<") == 2  # `run` has no evaluation
        assert number(final(other_run_dir, "test", evaluation)) in row
    assert rows[("Train", "Learning Rate")].count(">missing<") == 2
    # The configs' differences, flattened, one column per run.
    configs = section(page, "Config differences")
    for key, values in (("hidden_size", (16, 8)), ("learning_rate", (0.01, 0.05)),
                        ("num_epochs", (3, 2))):  # fmt: skip
        cells = "".join(f"<td>{json.dumps(v)}</td>" for v in values)
        assert f"<tr><td><code>{key}</code></td>{cells}</tr>" in configs


def test_the_best_of_the_runs_is_bold(run_dir, other_run_dir, tmp_path):
    assert main(["report", str(run_dir), str(other_run_dir), "-o", str(tmp_path / "c.html")]) == 0
    values = section((tmp_path / "c.html").read_text(), "Final and best values")
    losses = {d: final(d, "valid", "Loss") for d in (run_dir, other_run_dir)}
    accuracies = {d: final(d, "valid", "Accuracy") for d in (run_dir, other_run_dir)}
    row = next(r for r in values.split("<tr>") if "<td>Valid</td><td>Loss</td>" in r)
    assert f"<b>{number(min(losses.values()))}</b>" in row  # lower is better
    assert f"<b>{number(max(losses.values()))}</b>" not in row
    row = next(r for r in values.split("<tr>") if "<td>Valid</td><td>Accuracy</td>" in r)
    assert f"<b>{number(max(accuracies.values()))}</b>" in row  # higher is better


def test_the_comparison_is_written_to_the_current_directory_by_default(
    run_dir, other_run_dir, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(run_dir), str(other_run_dir)]) == 0
    assert capsys.readouterr().out.startswith("Wrote comparison.html (")
    assert (tmp_path / "comparison.html").is_file()
    assert not (run_dir / "report.html").exists() and not (other_run_dir / "report.html").exists()


def test_runs_that_share_a_name_are_told_apart_by_their_parents(run_dir, tmp_path, capsys):
    first = shutil.copytree(run_dir, tmp_path / "sweep" / "a" / "run")
    second = shutil.copytree(run_dir, tmp_path / "sweep" / "b" / "run")
    third = shutil.copytree(run_dir, tmp_path / "lone")
    runs = [str(first), str(second), str(third)]
    assert main(["report", *runs, "-o", str(tmp_path / "c.html")]) == 0
    page = (tmp_path / "c.html").read_text()
    chart = page.split("<h3>Loss · valid</h3>")[1].split("</svg>")[0]
    assert re.findall(r'class="legend">([^<]*)<', chart) == ["a/run", "b/run", "lone"]
    # Identical configs: nothing differs, the common keys are listed folded away.
    assert "The configs are the same." in page and "3 keys with the same value" in page
    capsys.readouterr()
    assert main(["summary", *runs]) == 0
    out = capsys.readouterr().out
    assert "| Valid | Loss     | lower   | a/run |" in out
    assert "| Valid | Loss     | lower   | b/run |" in out


def test_run_names():
    assert run_names([Path("x/run"), Path("y/run")]) == ["x/run", "y/run"]
    assert run_names([Path("p/x/run"), Path("q/x/run"), Path("y/run")]) == [
        "p/x/run", "q/x/run", "y/run"
    ]  # fmt: skip
    assert run_names([Path("/run"), Path("/a/run")]) == ["/run", "a/run"]
    assert run_names([Path("a"), Path("b")]) == ["a", "b"]


def test_summary_of_several_runs_lines_them_up(run_dir, other_run_dir):
    result = burnish("summary", run_dir, other_run_dir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == f"{'=' * 24} Run Comparison {'=' * 24}"
    assert lines[1] == "Runs: 2"
    assert lines[2] == f"  run    {run_dir}  (3 epochs)"
    assert lines[3] == f"  other  {other_run_dir}  (2 epochs)"
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line[:2] == "| "]
    assert rows[0] == ["Split", "Metric", "Best is", "Run", "Final", "Epoch", "Best", "Epoch"]
    table = {(r[0], r[1], r[3]): r[4:] for r in rows[1:]}
    assert len(table) == len(rows) - 1 == 7 * 2  # every metric of either run, for both
    for directory, name, epoch in ((run_dir, "run", "3"), (other_run_dir, "other", "2")):
        for split in ("Train", "Valid"):
            for metric in ("Accuracy", "Loss"):
                value = number(final(directory, split.lower(), metric))
                assert table[(split, metric, name)][:2] == [value, epoch]
    assert table[("Train", "Learning Rate", "run")] == ["missing", "-", "-", "-"]
    assert table[("Test (held-out)", "Loss", "run")] == ["missing", "-", "-", "-"]
    held_out = number(final(other_run_dir, "test", "Accuracy"))
    assert table[("Test (held-out)", "Accuracy", "other")] == [held_out, "-", held_out, "-"]


def test_the_comparison_renders_in_chromium_one_colour_per_run(
    run_dir, other_run_dir, constant_lr_run_dir, tmp_path, chromium_binary
):
    output = tmp_path / "compare.html"
    result = burnish("report", run_dir, other_run_dir, constant_lr_run_dir, "-o", output)
    assert result.returncode == 0, result.stderr
    messages, screenshot = render(chromium_binary, output, tmp_path / "compare.png")
    assert messages == []
    from PIL import Image

    with Image.open(screenshot) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16).reshape(-1, 3)
    # Each run's curves were drawn in its own colour: the legends and the table's swatches
    # alone make about 300 pixels of a colour, the curves (in the 1800 pixels shown) 1700+.
    for color in run_colors(3):
        rgb = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)])
        near = int((np.abs(pixels - rgb).max(axis=1) < 40).sum())
        assert near > 1000, f"too few pixels of the run colour {color}: {near}"
