"""Bad input to every command: one clear line on stderr, exit status 1, never a traceback."""

import os
import subprocess

import pytest

from burnish.cli import main
from burnish.cli.main import BUG_REPORT

from tests.cli.helpers import assert_one_line_error, command


@pytest.fixture
def bad(run_dir, tmp_path):
    """Paths a user may pass by mistake."""
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "no-logs").mkdir()
    (tmp_path / "no-logs" / "train").mkdir()  # started, killed before its first log line
    data = (run_dir / "model.mpk").read_bytes()
    (tmp_path / "truncated.mpk").write_bytes(data[: len(data) // 2])
    (tmp_path / "empty.mpk").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("not a record\n")
    return tmp_path


CASES = {  # id: (arguments, with RUN and BAD standing for the run and the bad inputs, fragments)
    "summary-missing": (["summary", "BAD/missing"], ["burnish summary: error: No such directory"]),
    "summary-file": (["summary", "RUN/model.mpk"], ["is a file, not a run's artifact directory"]),
    "summary-empty-dir": (
        ["summary", "BAD/empty-dir"],
        ["No training, validation or test artifacts"],
    ),
    "summary-no-logs": (["summary", "BAD/no-logs"], ["has no numeric metric logs"]),
    "report-missing": (["report", "BAD/missing"], ["burnish report: error: No such directory"]),
    "report-no-logs": (["report", "BAD/no-logs"], ["has no numeric metric logs"]),
    "report-output-dir": (["report", "RUN", "-o", "BAD"], ["is a directory; pass a file name"]),
    # Several runs: the one that is not a run is named, with why; nothing is written.
    "report-second-missing": (["report", "RUN", "BAD/missing", "-o", "BAD/out.html"],
                              ["No such directory", "missing"]),
    "report-second-empty-dir": (["report", "RUN", "BAD/empty-dir", "-o", "BAD/out.html"],
                                ["No training, validation or test artifacts", "empty-dir"]),
    "report-second-no-logs": (["report", "RUN", "BAD/no-logs", "-o", "BAD/out.html"],
                              ["no-logs has no numeric metric logs"]),
    "report-twice": (["report", "RUN", "RUN/", "-o", "BAD/out.html"],
                     ["is given twice", "Pass each run's directory once"]),
    "summary-second-file": (["summary", "RUN", "RUN/model.mpk"],
                            ["model.mpk is a file, not a run's artifact directory"]),
    "summary-twice": (["summary", "RUN", "RUN"], ["is given twice"]),
    "inspect-missing": (["inspect", "BAD/missing.mpk"], ["burnish inspect: error: No such file"]),
    "inspect-dir": (["inspect", "RUN"], ["is a directory, not a record file", "model.mpk"]),
    "inspect-text": (["inspect", "BAD/notes.txt"], ["of an unknown format, not a record file"]),
    "inspect-empty": (["inspect", "BAD/empty.mpk"], ["is empty, not a record file"]),
    "inspect-json": (["inspect", "RUN/config.json"], ["valid JSON but not a burnish record"]),
    "inspect-truncated": (["inspect", "BAD/truncated.mpk"], ["Cannot load", "truncated.mpk"]),
    "convert-truncated": (["convert", "BAD/truncated.mpk", "BAD/out", "--to", "bin"],
                          ["burnish convert: error: Cannot load"]),
    "convert-missing": (["convert", "BAD/missing.mpk", "BAD/out", "--to", "bin"],
                        ["No such file"]),
    "convert-contradiction": (["convert", "RUN/model.mpk", "BAD/out", "--to", "default",
                               "--precision", "half"],
                              ["--to default is always full precision", "--to compact"]),
}  # fmt: skip


def arguments(case, run_dir, bad):
    paths = {"RUN": str(run_dir), "BAD": str(bad)}
    return [next((arg.replace(k, v, 1) for k, v in paths.items() if arg.startswith(k)), arg)
            for arg in CASES[case][0]]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_bad_input_gives_one_line_and_status_1(case, run_dir, bad, capsys):
    status = main(arguments(case, run_dir, bad))
    out, err = capsys.readouterr()
    assert_one_line_error(subprocess.CompletedProcess([], status, out, err), *CASES[case][1])
    assert not list(bad.glob("out*"))


def test_the_installed_command_prints_one_line_too(run_dir, bad):
    """The console script itself, on one bad input per command (run side by side)."""
    env = {**os.environ, "COLUMNS": "120"}
    cases = ["summary-no-logs", "report-missing", "inspect-truncated", "convert-missing"]
    running = [
        (case, subprocess.Popen([*command(), *arguments(case, run_dir, bad)], env=env,
                                text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for case in cases
    ]  # fmt: skip
    for case, process in running:
        out, err = process.communicate(timeout=120)
        result = subprocess.CompletedProcess(case, process.returncode, out, err)
        assert_one_line_error(result, *CASES[case][1])


@pytest.mark.parametrize("args", [[], ["convert", "a", "b"], ["inspect"], ["report", "--bad"]])
def test_usage_errors_exit_with_status_2(args, capsys):
    if not args:
        assert main(args) == 2
    else:
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        assert exit_info.value.code == 2
    assert "usage: burnish" in capsys.readouterr().err


def test_a_bug_prints_its_traceback_and_how_to_report_it(run_dir, monkeypatch, capsys):
    """Not an input error: the traceback (where the bug is), the one line, how to report it."""
    import burnish.cli.svg

    def broken(*args, **kwargs):
        return 1 / 0

    monkeypatch.setattr(burnish.cli.svg, "nice_ticks", broken)  # a bug in the chart code
    assert main(["report", str(run_dir), "-o", str(run_dir.parent / "bug.html")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("Traceback (most recent call last):")
    assert "in broken" in err and "ZeroDivisionError: division by zero" in err
    lines = err.splitlines()
    assert lines[-2] == "burnish report: error: unexpected ZeroDivisionError: division by zero"
    assert lines[-1] == BUG_REPORT and "report it" in BUG_REPORT
    assert not (run_dir.parent / "bug.html").exists()


def test_debug_prints_the_traceback_of_an_input_error(bad, capsys):
    assert main(["--debug", "inspect", str(bad / "empty.mpk")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith("burnish inspect: error: ")
    assert "is empty, not a record file" in err.splitlines()[-1]
