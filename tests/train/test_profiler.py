"""The profiler switch, `profile(steps=...)` (components/profiler.py), through real MNIST fits on
the CPU: the Chrome trace holds the chosen global steps and nothing before them, TensorBoard's
PyTorch profiler plugin (torch-tb-profiler, in a process of its own) finds the run and its
steps, `experiment.log` holds the table; steps the run does not reach, a stop and a resume,
bad settings, and no trace of the profiler when it is off."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import LearnerBuilder, SupervisedTraining, TrainingListener
from burnish.train.components.profiler import MAX_STEPS, ProfileSettings, profile_settings

from tests.train.helpers import Mlp, builder, loaders

# 640 training images in batches of 64: 10 steps per epoch.
STEPS_PER_EPOCH = 10
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def fit(b: LearnerBuilder):
    train, valid = loaders()
    return b.build(Mlp(), AdamConfig().init(), 1e-3).fit(train, valid)


def events(directory: Path) -> list[dict]:
    return json.loads((directory / "profile" / "trace.json").read_text())["traceEvents"]


def markers(trace: list[dict]) -> dict[int, tuple[float, float]]:
    """Each `ProfilerStep#N` marker's step and span (start, end) in microseconds."""
    found = {}
    for event in trace:
        name = event.get("name", "")
        if name.startswith("ProfilerStep#") and event.get("ph") == "X":
            found[int(name.removeprefix("ProfilerStep#"))] = (
                event["ts"],
                event["ts"] + event["dur"],
            )
    return found


def experiment_log(directory: Path) -> str:
    return (directory / "experiment.log").read_text()


class StopAfter(TrainingListener):
    """Stops the run after global training step `step` (a checkpoint of that point)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_iteration_end(self, event):
        if str(event.split) == "train" and event.step == self.step:
            event.stop(f"stopped after step {self.step}")


# Loads `logdir` as TensorBoard's PyTorch profiler plugin does (its run discovery and loader,
# which parses each trace in processes of its own) and prints what it found.
TENSORBOARD_LOAD = textwrap.dedent(
    """
    import json, os, sys

    def main():
        from torch_tb_profiler import io, utils
        from torch_tb_profiler.io.cache import Cache
        from torch_tb_profiler.profiler.loader import RunLoader

        logdir = sys.argv[1]
        found = {}
        for root, _, files in io.walk(logdir):
            if any(utils.is_chrome_trace_file(name) for name in files):
                name = os.path.relpath(root, logdir)
                run = RunLoader(name, root, Cache()).load()
                profiles = [run.get_profile(w, s) for w in run.workers for s in run.get_spans(w)]
                found[name] = {
                    "workers": list(run.workers),
                    "views": [view.name for view in run.views],
                    "steps": [[row[0] for row in p.overview["steps"]["rows"]] for p in profiles],
                }
        print(json.dumps(found))

    if __name__ == "__main__":
        main()
    """
)


def tensorboard_runs(logdir: Path, script_dir: Path) -> dict:
    script = script_dir / "load_profile.py"
    script.write_text(TENSORBOARD_LOAD)
    done = subprocess.run(
        [sys.executable, str(script), str(logdir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_chosen_steps_are_profiled_and_written_where_the_tools_look(tmp_path) -> None:
    run = tmp_path / "run"
    fit(builder(run, epochs=1).profile(steps=range(3, 6)))
    trace = events(run)
    spans = markers(trace)
    assert sorted(spans) == [3, 4, 5]  # the global steps, and the warm-up step 2 left out
    start, end = min(s for s, _ in spans.values()), max(e for _, e in spans.values())
    operations = [e for e in trace if e.get("name", "").startswith("aten::") and "ts" in e]
    names = {e["name"] for e in operations}
    assert {"aten::addmm", "aten::mm"} <= names  # the forward and backward of the Linears
    outside = [e for e in operations if not start - 1 <= e["ts"] <= end + 1]  # 1 us: rounding
    assert outside == []  # nothing of steps 1-2 (or of the validation after step 10)
    # TensorBoard's file: the name tensorboard_trace_handler writes, in a run directory.
    boards = sorted((run / "profile").glob("*.pt.trace.json"))
    assert len(boards) == 1 and markers(json.loads(boards[0].read_text())["traceEvents"]) == spans
    found = tensorboard_runs(run, tmp_path)
    assert list(found) == ["profile"]
    assert found["profile"]["steps"] == [["3", "4", "5"]]
    assert {"overall", "operator", "trace"} <= set(found["profile"]["views"])
    text = experiment_log(run)
    assert "Profile of steps 3-5, top operations by self CPU time:" in text
    assert "Self CPU %" in text and "aten::addmm" in text
    assert f"TensorBoard: tensorboard --logdir {run}" in text


def test_steps_past_the_end_of_the_run_warn_and_keep_what_ran(tmp_path) -> None:
    fit(builder(tmp_path, epochs=1).profile(steps=range(8, 15)))
    spans = markers(events(tmp_path))
    # Steps 8-10 ran; the run's end (its validation) is under the marker of the step after it.
    assert sorted(spans) == [8, 9, 10, 11]
    text = experiment_log(tmp_path)
    assert "Profile of steps 8-10," in text
    assert (
        "`profile(steps=...)` chose steps 8-14, but the run ended after step 10 (profiled "
        "steps 8-10 only). Choose steps up to 10, or train longer." in text
    )


def test_a_window_the_run_never_reaches_writes_nothing_and_says_so(tmp_path) -> None:
    result = fit(builder(tmp_path, epochs=1).profile(steps=[40]))
    assert result.epochs_completed == 1
    assert not (tmp_path / "profile").exists()
    assert "chose step 40, but the run ended after step 10 (nothing profiled)" in (
        experiment_log(tmp_path)
    )


def test_a_profile_that_cannot_be_written_is_a_warning_and_training_goes_on(tmp_path) -> None:
    (tmp_path / "profile").write_text("a file where the profile's directory would go")
    result = fit(builder(tmp_path, epochs=1).profile(steps=range(3, 6)))
    assert result.epochs_completed == 1 and not result.interrupted
    assert (tmp_path / "profile").read_text() == "a file where the profile's directory would go"
    text = experiment_log(tmp_path)
    assert f"Writing the profile of steps 3-5 to {tmp_path / 'profile'} failed (" in text
    assert "training goes on without it" in text
    assert "Profile of steps 3-5" not in text and "nothing profiled" not in text


def test_the_window_spans_epochs(tmp_path) -> None:
    fit(builder(tmp_path, epochs=2).profile(steps=range(9, 13)))
    assert sorted(markers(events(tmp_path))) == [9, 10, 11, 12]  # the validation inside 11


@pytest.mark.parametrize(
    ("stop", "first_run", "resumed"),
    [
        (2, None, [3, 4, 5]),  # stopped in the warm-up step: the resume profiles the window
        (4, [3, 4, 5], [5]),  # stopped inside it: the steps that ran, then those that remain
    ],
)
def test_a_resumed_run_profiles_the_global_steps_that_remain(
    tmp_path, stop, first_run, resumed
) -> None:
    def profiled():  # a builder each (its interrupter remembers the stop)
        return builder(tmp_path, epochs=1, recorder=DefaultRecorder()).profile(range(3, 6))

    result = fit(profiled().with_listener(StopAfter(stop)))
    assert result.interrupted
    text = experiment_log(tmp_path)
    if first_run is None:
        assert not (tmp_path / "profile").exists()
        assert "the run stopped after step 2 (nothing profiled)" in text
    else:
        assert sorted(markers(events(tmp_path))) == first_run  # 5: the stop's checkpoint
        assert "the run stopped after step 4 (profiled steps 3-4 only)" in text
    assert "resuming it profiles the steps that remain" in text
    fit(profiled().resume())
    assert sorted(markers(events(tmp_path))) == resumed
    assert f"Profiled {'steps 3-5' if stop == 2 else 'step 5'}:" in experiment_log(tmp_path)
    boards = list((tmp_path / "profile").glob("*.pt.trace.json"))
    assert len(boards) == (1 if first_run is None else 2)  # TensorBoard keeps both


def test_a_run_resumed_after_the_window_profiles_nothing(tmp_path) -> None:
    fit(builder(tmp_path, epochs=1, recorder=DefaultRecorder()))
    fit(builder(tmp_path, epochs=2, recorder=DefaultRecorder()).resume().profile([3]))
    assert not (tmp_path / "profile").exists()
    assert "Profiling: step 3 came before this start (after step 10)" in experiment_log(tmp_path)


def test_profiling_off_leaves_no_trace_and_imports_nothing(tmp_path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from burnish.optim import AdamConfig
        from tests.train.helpers import Mlp, builder, loaders
        learner = builder({str(tmp_path)!r}, epochs=1).build(Mlp(), AdamConfig().init(), 1e-3)
        learner.fit(*loaders())
        print("burnish.train.components.profiler" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "False"
    assert not (tmp_path / "profile").exists()
    assert "Profil" not in experiment_log(tmp_path)


def test_supervised_training_has_the_same_switch(tmp_path) -> None:
    training = SupervisedTraining(tmp_path, [1], [1]).profile(range(2, 4), memory=True)
    assert training._settings.logging.profiling == ProfileSettings(range(2, 4), memory=True)
    assert SupervisedTraining(tmp_path, [1], [1])._settings.logging.profiling is None


@pytest.mark.parametrize(
    ("steps", "error", "match"),
    [
        (range(10, 10), ValueError, r"must name at least one step\. Received: range\(10, 10\)"),
        ([], ValueError, "must name at least one step"),
        (range(0, 5), ValueError, r"counts global training steps from 1 .* step 0 in"),
        ([-3, -2], ValueError, "Received step -3"),
        (range(10, 20, 2), ValueError, "one window of consecutive steps"),
        ([3, 5], ValueError, r"consecutive steps \(one trace\)\. Received: \[3, 5\]"),
        (10, TypeError, r"takes the global training steps to profile, e\.g\. range\(10, 20\)"),
        ("10", TypeError, "Received: '10'"),
        ([1.0, 2.0], TypeError, r"takes integer steps\. Received 1\.0 in \[1\.0, 2\.0\]"),
        ([True], TypeError, "takes integer steps"),
    ],
)
def test_bad_steps_are_refused_by_name(tmp_path, steps, error, match) -> None:
    with pytest.raises(error, match=match):
        LearnerBuilder(tmp_path).profile(steps=steps)


def test_bad_flags_and_endless_steps_are_refused(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"`profile\(memory=\.\.\.\)` must be True or False"):
        LearnerBuilder(tmp_path).profile(range(1, 3), memory="yes")  # type: ignore[arg-type]

    def endless():
        step = 1
        while True:
            yield step
            step += 1

    with pytest.raises(ValueError, match=f"at most {MAX_STEPS:,} steps"):
        LearnerBuilder(tmp_path).profile(endless())


def test_the_window_is_a_range_of_the_steps_given() -> None:
    assert profile_settings([7, 5, 6, 6], False, False, False).steps == range(5, 8)
    assert profile_settings(range(9, 3, -1), False, False, False).steps == range(4, 10)
    assert profile_settings(iter([2]), True, True, True) == ProfileSettings(
        range(2, 3), True, True, True
    )


STEP_VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP_VALUES, max_size=12))
def test_any_list_of_steps_is_a_window_or_a_clear_error(values) -> None:
    try:
        window = profile_settings(values, False, False, False).steps
    except (TypeError, ValueError) as error:
        assert "profile(steps=...)" in str(error)
        return
    ints = set(values)
    assert window.step == 1 and set(window) == ints and window.start >= 1


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=-(2**80), max_value=2**80),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.integers(min_value=-5, max_value=5).filter(lambda step: step != 0),
)
def test_any_range_is_a_window_or_a_clear_error(start, stop, step) -> None:
    steps = range(start, stop, step)
    try:
        window = profile_settings(steps, False, False, False).steps
    except ValueError as error:
        assert "profile(steps=...)" in str(error) and len(str(error)) < 400
        if steps:
            low, high = min(steps[0], steps[-1]), max(steps[0], steps[-1])
            assert low < 1 or (low != high and abs(step) > 1) or high - low >= MAX_STEPS
        return
    assert window == range(min(steps[0], steps[-1]), max(steps[0], steps[-1]) + 1)
