"""`burnish summary` and `burnish report` on run directories whose logs hold awkward values, one
run or several compared (with any config.json).

The same inputs as the chart tests (tests/cli/test_svg.py): constant, nearly constant, one
value, no value, NaN/inf, tiny and huge, written by the learner's own `FileMetricLogger`.
"""

import json
import math
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnish.cli import main
from burnish.cli.compare import run_names
from burnish.train.logger import FileMetricLogger
from burnish.train.metric.base import NumericEntry

from tests.cli.test_config_diff import JSON
from tests.cli.test_svg import SERIES

# split -> metric -> epochs (1..3) of iteration values
EPOCHS = st.lists(SERIES, min_size=1, max_size=3)
RUN = st.fixed_dictionaries(
    {
        "train": st.fixed_dictionaries({"Loss": EPOCHS, "Learning Rate": EPOCHS}),
        "valid": st.dictionaries(st.sampled_from(["Loss", "Accuracy"]), EPOCHS, max_size=2),
    }
)


def write_run(directory: Path, run: dict, count: int) -> None:
    for split, metrics in run.items():
        logger = FileMetricLogger(directory / split)
        epochs = max((len(e) for e in metrics.values()), default=0)
        for epoch in range(1, epochs + 1):
            for name, values in metrics.items():
                if epoch <= len(values):
                    logger.log(name, epoch, [NumericEntry(v, count) for v in values[epoch - 1]])
            logger.end_epoch(epoch)
        logger.close()


# capsys is read out at each step of each example.
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(RUN, st.sampled_from([1, 32, 0]))
def test_summary_and_report_of_any_logged_values(capsys, run, count):
    capsys.readouterr()
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary) / "run"
        write_run(directory, run, count)
        logged = count > 0 and any(
            values for metrics in run.values() for epochs in metrics.values() for values in epochs
        )
        status = main(["summary", str(directory)])
        out, err = capsys.readouterr()
        if not logged:  # nothing to summarise: the input error, one line
            assert status == 1 and "has no numeric metric logs" in err and out == "", err
            return
        assert status == 0, err
        rows = [line for line in out.splitlines() if line.startswith(("| Train", "| Valid"))]
        for split, metrics in run.items():
            for name, epochs in metrics.items():
                if any(epochs):
                    assert any(row.startswith(f"| {split.title()} | {name} ") for row in rows)
        assert "Learning_Rate" not in out
        for row in rows:  # finite numbers, or NaN or inf as Burn writes them
            for cell in row.strip("|").split("|")[2::2]:
                assert cell.strip() in ("NaN", "inf", "-inf") or math.isfinite(float(cell))
        assert main(["report", str(directory), "-o", str(directory / "r.html")]) == 0
        page = (directory / "r.html").read_text()
        assert "Traceback" not in capsys.readouterr().err
        attributes = " ".join(re.findall(r'="([^"]*)"', page)).lower()
        assert "nan" not in attributes and "inf" not in attributes  # every coordinate a number


# A run's config.json: none, any JSON (nested, every type, NaN, huge), or not JSON at all.
CONFIG = st.one_of(st.none(), JSON, st.just("{not json"), st.just("[" * 100_000))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(RUN, st.sampled_from([1, 32, 0]), CONFIG, st.sampled_from(["run", "b", "é x"])),
        min_size=2,
        max_size=3,
    )
)
def test_several_runs_of_any_values_and_configs_compare(capsys, runs):
    capsys.readouterr()
    with tempfile.TemporaryDirectory() as temporary:
        directories = []
        for index, (run, count, config, name) in enumerate(runs):
            directory = Path(temporary) / f"parent-{index}" / name
            write_run(directory, run, count)
            if isinstance(config, str):
                (directory / "config.json").write_text(config)
            elif config is not None:
                (directory / "config.json").write_text(json.dumps(config))
            directories.append(directory)
        empty = [
            directory
            for directory, (run, count, _, _) in zip(directories, runs)
            if count == 0 or not any(v for m in run.values() for e in m.values() for v in e)
        ]
        output = Path(temporary) / "comparison.html"
        for command in (["summary"], ["report", "-o", str(output)]):
            status = main([*command, *map(str, directories)])
            out, err = capsys.readouterr()
            if empty:  # the first directory that is not a run is named, nothing written
                assert status == 1 and f"{empty[0]} has no numeric metric logs" in err, err
                assert not output.exists()
                continue
            assert status == 0 and "Traceback" not in err, err
            for name in run_names(directories):
                assert name in (out if command == ["summary"] else output.read_text())
        if not empty:
            page = output.read_text()
            attributes = " ".join(re.findall(r'="([^"]*)"', page)).lower()
            assert "nan" not in attributes and "inf" not in attributes  # every coordinate
            assert page.count("<h2>") == 4 and page.endswith("</html>\n")
