"""torch.distributed on CPU with Gloo: two real processes under torchrun train like one process
on the concatenated batches; only rank 0 writes; a crashing rank fails the run; resume works."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch

from tests import fork_server
from tests.helpers import iteration_lines

SCRIPT = Path(__file__).with_name("distributed_run.py")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def torchrun(
    *args: str,
    nproc: int = 2,
    timeout: float = 240,
    restarts: int = 0,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc_per_node=NPROC SCRIPT ARGS`, its agent and ranks forked
    (tests/fork_server.py)."""
    options = ["--standalone", f"--nproc_per_node={nproc}", f"--max-restarts={restarts}"]
    options.append("--monitor-interval=0.5")
    env = {**os.environ, "BURNISH_DIST_TIMEOUT": "60", "OMP_NUM_THREADS": "1", **(env or {})}
    return fork_server.torchrun(
        options, [str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def single(*args: str) -> subprocess.CompletedProcess:
    """The script in one process (forked: tests/fork_server.py)."""
    return fork_server.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=240)


def check(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr[-4000:]


def assert_params_close(a: Path, b: Path, atol: float = 1e-6) -> None:
    first, second = torch.load(a), torch.load(b)
    assert first.keys() == second.keys()
    for key in first:
        torch.testing.assert_close(first[key], second[key], atol=atol, rtol=0)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """One process, batch 32: what two ranks of batch 16 must reproduce."""
    directory = tmp_path_factory.mktemp("single")
    check(single(str(directory / "artifacts"), str(directory / "final.pt"), "--batch-size", "32"))
    return directory


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """One uninterrupted two-rank run with the default flags: what the resumed, restarted and
    preempted runs below must end as, bit for bit (one run shared, read-only, by them all)."""
    directory = tmp_path_factory.mktemp("straight")
    check(torchrun(str(directory / "artifacts"), str(directory / "final.pt")))
    return directory


def test_two_ranks_equal_one_process_on_the_concatenated_batches(one_process, tmp_path):
    check(torchrun(str(tmp_path / "artifacts"), str(tmp_path / "final.pt"), "--csv"))
    assert_params_close(tmp_path / "final.pt", one_process / "final.pt")
    # Trackers run on rank 0 only (every rank was given one).
    assert (tmp_path / "artifacts" / "metrics-rank0.csv").is_file()
    assert not (tmp_path / "artifacts" / "metrics-rank1.csv").exists()
    # Metrics are reduced over the ranks: the logs equal one process over the same items.
    for split, lines in (("train", 8), ("valid", 2)):
        for epoch in (1, 2):
            ours = iteration_lines(tmp_path / f"artifacts/{split}/epoch-{epoch}/Loss.log")
            theirs = iteration_lines(one_process / f"artifacts/{split}/epoch-{epoch}/Loss.log")
            ours_pairs = [tuple(map(float, line.split(","))) for line in ours]
            theirs_pairs = [tuple(map(float, line.split(","))) for line in theirs]
            assert len(ours_pairs) == lines  # written once, by rank 0 only
            for (v1, c1), (v2, c2) in zip(ours_pairs, theirs_pairs):
                assert c1 == c2 and abs(v1 - v2) < 1e-5
    # The trackers' points every 3 steps (8 per epoch), with the reduced values of the logs.
    rows = (tmp_path / "artifacts" / "metrics-rank0.csv").read_text().splitlines()
    points = [row.split(",") for row in rows[1:] if row.split(",")[1] and ",Loss," in row]
    assert [(e, i, s) for e, i, s, _, _ in points] == [
        ("1", "3", "train"), ("1", "6", "train"), ("2", "1", "train"), ("2", "4", "train"),
        ("2", "7", "train"),
    ]  # fmt: skip
    for epoch, iteration, _, _, value in points:
        lines = iteration_lines(tmp_path / f"artifacts/train/epoch-{epoch}/Loss.log")
        assert float(value) == float(lines[int(iteration) - 1].split(",")[0])
    log = (tmp_path / "artifacts" / "experiment.log").read_text()
    assert "rank 0 of 2" in log and "rank 1 of 2" not in log
    assert sorted(p.name for p in (tmp_path / "artifacts" / "checkpoint").iterdir()) == [
        "epoch-1",
        "epoch-2",
    ]


def test_resume_under_two_ranks_and_on_another_world_size(straight, tmp_path):
    resumed = tmp_path / "resumed"
    check(torchrun(str(resumed / "artifacts"), str(resumed / "final.pt"), "--epochs", "1"))
    check(torchrun(str(resumed / "artifacts"), str(resumed / "final.pt"), "--resume-epoch", "1"))
    assert_params_close(resumed / "final.pt", straight / "final.pt", atol=0)
    # The epoch checkpoint of a 2-rank run loads in one process (batch 32 = 2 x 16).
    check(
        single(
            str(resumed / "artifacts"),
            str(tmp_path / "one.pt"),
            "--resume-epoch",
            "1",
            "--batch-size",
            "32",
        )
    )
    assert_params_close(tmp_path / "one.pt", straight / "final.pt", atol=1e-5)


def test_custom_loop_on_a_ddp_model(one_process, tmp_path):
    check(torchrun(str(tmp_path / "artifacts"), str(tmp_path / "final.pt"), "--custom-loop"))
    assert_params_close(tmp_path / "final.pt", one_process / "final.pt")


def test_a_crashing_rank_fails_the_run_instead_of_hanging(tmp_path):
    result = torchrun(str(tmp_path / "artifacts"), str(tmp_path / "final.pt"), "--crash-at", "3")
    assert result.returncode != 0
    assert "rank 1 failed on purpose" in result.stderr
    assert not (tmp_path / "final.pt").exists()


def test_sigkill_mid_epoch_under_two_ranks_then_resume_is_bit_identical(straight, tmp_path):
    resumed = tmp_path / "resumed"
    flags = ("--checkpoint-every", "3")
    killed = torchrun(
        str(resumed / "artifacts"), str(resumed / "final.pt"), *flags, "--kill-at", "13"
    )
    assert killed.returncode != 0 and not (resumed / "final.pt").exists()
    names = [p.name for p in (resumed / "artifacts" / "checkpoint").iterdir()]
    assert "epoch-2-iteration-3" in names, names  # 8 iterations per epoch: 13 = epoch 2, it. 5
    check(torchrun(str(resumed / "artifacts"), str(resumed / "final.pt"), *flags))
    assert_params_close(resumed / "final.pt", straight / "final.pt", atol=0)
    for split in ("train", "valid"):
        for epoch in (1, 2):
            relative = f"artifacts/{split}/epoch-{epoch}/Loss.log"
            assert (resumed / relative).read_bytes() == (straight / relative).read_bytes()


@pytest.mark.parametrize(
    ("kill", "resumed_from"),
    [
        # 8 iterations per epoch: the kill at step 13 is epoch 2, iteration 5; the newest
        # committed checkpoint then was epoch 2, iteration 3.
        (("--kill-at", "13", "--kill-rank", "1"), "epoch-2-iteration-3"),
        # Rank 0 killed in its writer thread while it writes epoch-1-iteration-6.
        (("--kill-in-writer", "25"), "epoch-1-iteration-3"),
    ],
    ids=["rank-1-mid-epoch", "rank-0-in-checkpoint-write"],
)
def test_elastic_restart_after_a_rank_is_killed_is_bit_identical(
    straight, tmp_path, kill, resumed_from
):
    """torchrun --max-restarts=1: a rank SIGKILLed mid-epoch or while its checkpoint is being
    written; the agent restarts the group, which resumes from the newest committed checkpoint
    and ends as an uninterrupted run."""
    elastic = tmp_path / "elastic"
    flags = ("--checkpoint-every", "3", *kill)
    done = torchrun(str(elastic / "artifacts"), str(elastic / "final.pt"), *flags, restarts=1)
    check(done)
    # The kill happened (which rank's exit torchrun's agent observes first is a race: the
    # survivor's Gloo error may come first) and the restart recovered from it.
    assert "SIGKILLs itself" in done.stderr
    log = (elastic / "artifacts" / "experiment.log").read_text()
    assert f"Resumed from checkpoint {resumed_from}," in log, log[-2000:]
    assert_params_close(elastic / "final.pt", straight / "final.pt", atol=0)
    for split in ("train", "valid"):
        for epoch in (1, 2):
            relative = f"artifacts/{split}/epoch-{epoch}/Loss.log"
            assert (elastic / relative).read_bytes() == (straight / relative).read_bytes()


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_accumulation_under_two_ranks_equals_one_process(tmp_path, strategy):
    """DDP: accumulated iterations do not communicate, the optimizer step averages the sums.
    FSDP: every backward reduce-scatters; the shards of the gradients accumulate."""
    flags = ("--accumulate", "2", "--epochs", "1")
    two = (*flags, "--batch-size", "8", *(("--fsdp",) if strategy == "fsdp" else ()))
    check(torchrun(str(tmp_path / "two"), str(tmp_path / "two.pt"), *two))
    check(single(str(tmp_path / "one"), str(tmp_path / "one.pt"), *flags, "--batch-size", "16"))
    assert_params_close(tmp_path / "two.pt", tmp_path / "one.pt", atol=1e-5)


def test_parameters_without_gradients_on_some_or_all_ranks_equal_one_process(tmp_path):
    """A parameter no rank differentiates is not stepped (weight decay would move it); one
    that only some ranks differentiate gets their average; 1 KB buckets, launched in order."""
    flags = ("--unused", "--epochs", "1")
    check(torchrun(str(tmp_path / "two"), str(tmp_path / "two.pt"), *flags))
    check(single(str(tmp_path / "one"), str(tmp_path / "one.pt"), *flags, "--batch-size", "32"))
    assert_params_close(tmp_path / "two.pt", tmp_path / "one.pt")


def test_a_gradient_changed_after_backward_fails_clearly(tmp_path):
    result = torchrun(str(tmp_path / "artifacts"), str(tmp_path / "final.pt"), "--modify-grads")
    assert result.returncode != 0
    assert "A gradient changed after the backward pass produced it" in result.stderr


def test_fsdp_two_ranks_equal_one_process_on_the_concatenated_batches(one_process, tmp_path):
    check(torchrun(str(tmp_path / "artifacts"), str(tmp_path / "final.pt"), "--fsdp"))
    assert_params_close(tmp_path / "final.pt", one_process / "final.pt", atol=1e-5)
    for epoch in (1, 2):  # metrics too, within one item a batch: the parameters differ by
        # up to 1e-5 (another reduction order), so a logit near a tie may take the other class
        relative = f"artifacts/valid/epoch-{epoch}/Accuracy.log"
        ours, theirs = (iteration_lines(run / relative) for run in (tmp_path, one_process))
        assert len(ours) == len(theirs) == 2
        for mine, other in zip(ours, theirs):
            (v1, c1), (v2, c2) = (tuple(map(float, line.split(","))) for line in (mine, other))
            assert c1 == c2 and abs(v1 - v2) <= 100 / c1 + 1e-9


def test_fsdp_sigkill_mid_epoch_then_resume_is_bit_identical(tmp_path):
    """Sharded Adam: checkpoints gather the shards of parameters and moments on rank 0; the
    resumed run cuts them back into shards and continues exactly."""
    flags = ("--fsdp", "--adam")
    straight = tmp_path / "straight"
    check(torchrun(str(straight / "artifacts"), str(straight / "final.pt"), *flags))
    resumed = tmp_path / "resumed"
    every = ("--checkpoint-every", "3")
    killed = torchrun(
        str(resumed / "artifacts"), str(resumed / "final.pt"), *flags, *every, "--kill-at", "13"
    )
    assert killed.returncode != 0 and not (resumed / "final.pt").exists()
    names = [p.name for p in (resumed / "artifacts" / "checkpoint").iterdir()]
    assert "epoch-2-iteration-3" in names, names
    check(torchrun(str(resumed / "artifacts"), str(resumed / "final.pt"), *flags, *every))
    assert_params_close(resumed / "final.pt", straight / "final.pt", atol=0)
    for split in ("train", "valid"):
        for epoch in (1, 2):
            relative = f"artifacts/{split}/epoch-{epoch}/Loss.log"
            assert (resumed / relative).read_bytes() == (straight / relative).read_bytes()
    # The sharded run's epoch checkpoint holds the whole model: it resumes in one process.
    one = ("--adam", "--resume-epoch", "1", "--batch-size", "32")
    check(single(str(straight / "artifacts"), str(tmp_path / "one.pt"), *one))
    assert_params_close(tmp_path / "one.pt", straight / "final.pt", atol=1e-4)


def test_fsdp_under_bf16_keeps_float32_parameters_and_trains_like_one_process(tmp_path):
    """FSDP computes in bfloat16 (its parameter cast), one process under autocast: the two
    agree to bfloat16's precision; parameters, checkpoints and the result stay float32."""
    import burnish as bn
    from burnish.record import DefaultRecorder

    from tests.train.helpers import Mlp

    flags = ("--bf16", "--epochs", "1")
    check(torchrun(str(tmp_path / "two"), str(tmp_path / "two.pt"), *flags, "--fsdp"))
    check(single(str(tmp_path / "one"), str(tmp_path / "one.pt"), *flags, "--batch-size", "32"))
    two = torch.load(tmp_path / "two.pt")
    assert {value.dtype for value in two.values()} == {torch.float32}
    assert_params_close(tmp_path / "two.pt", tmp_path / "one.pt", atol=5e-3)  # seen: 1.6e-3
    bn.seed(3)  # the script's initial model: training moved it by 10x the tolerance
    initial = Mlp().state_dict()
    assert max((two[k] - initial[k]).abs().max().item() for k in initial) > 0.05  # seen: 0.074
    path = next((tmp_path / "two" / "checkpoint" / "epoch-1").glob("model.*"))
    tensors = [v for v in _leaves(DefaultRecorder().load(path)) if isinstance(v, torch.Tensor)]
    assert tensors and {t.dtype for t in tensors} == {torch.float32}


def _leaves(record):
    if isinstance(record, dict):
        for value in record.values():
            yield from _leaves(value)
    elif isinstance(record, (list, tuple)):
        for value in record:
            yield from _leaves(value)
    else:
        yield record


def test_two_ranks_keep_the_ema_of_one_process_on_the_concatenated_batches(tmp_path):
    ema = ("--ema", "--on-non-finite", "skip")
    check(
        single(
            str(tmp_path / "one" / "artifacts"),
            str(tmp_path / "one.pt"),
            "--batch-size",
            "32",
            *ema,
        )
    )
    check(torchrun(str(tmp_path / "two" / "artifacts"), str(tmp_path / "two.pt"), *ema))
    assert any(key.startswith("ema.") for key in torch.load(tmp_path / "one.pt"))
    assert_params_close(tmp_path / "two.pt", tmp_path / "one.pt")


def test_a_nan_on_one_rank_stops_every_rank_at_the_same_read_back(tmp_path):
    artifacts = tmp_path / "artifacts"
    flags = ("--on-non-finite", "stop", "--nan-at", "5", "--nan-rank", "1")
    result = torchrun(str(artifacts), str(tmp_path / "final.pt"), "--checkpoint-every", "3", *flags)
    check(result)
    assert result.stdout.count("stopped_non_finite=True") == 2  # both ranks ended, none hung
    said = result.stderr  # rank 0's renderer (the loss is averaged over the ranks: NaN)
    assert said.count("Non-finite loss (nan) at epoch 1, iteration 5.") == 1
    assert "The last committed checkpoint" in said and "epoch-1-iteration-3" in said
    committed = sorted(p.name for p in (artifacts / "checkpoint").iterdir())
    assert committed == ["epoch-1-iteration-3"]
    assert all(torch.isfinite(t).all() for t in torch.load(tmp_path / "final.pt").values())


# 8 iterations an epoch; 13 steps end the run 5 iterations into epoch 2, with validations at
# steps 3 and 6, 8 (epoch 1's end), 9 and 12 and 13 (the budget's end).
LONG = ("--max-iterations", "13", "--valid-every", "3")


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_a_step_budget_and_validations_inside_epochs_under_two_ranks_equal_one_process(
    tmp_path, strategy
):
    """The ranks validate at the same steps (collectives in step); under FSDP the model is
    back in training mode after each validation inside an epoch."""
    two = (*LONG, *(("--fsdp",) if strategy == "fsdp" else ()))
    check(torchrun(str(tmp_path / "two"), str(tmp_path / "two.pt"), *two))
    check(single(str(tmp_path / "one"), str(tmp_path / "one.pt"), *LONG, "--batch-size", "32"))
    assert_params_close(tmp_path / "two.pt", tmp_path / "one.pt", atol=1e-5)
    validations = "valid/validations.json"
    assert (tmp_path / "two" / validations).read_text() == (
        tmp_path / "one" / validations
    ).read_text()
    for number in range(1, 7):
        ours = iteration_lines(tmp_path / f"two/valid/epoch-{number}/Loss.log")
        theirs = iteration_lines(tmp_path / f"one/valid/epoch-{number}/Loss.log")
        assert len(ours) == len(theirs) == 2
        for mine, other in zip(ours, theirs):
            (v1, c1), (v2, c2) = (tuple(map(float, line.split(","))) for line in (mine, other))
            assert c1 == c2 and abs(v1 - v2) < 1e-5
    assert len(iteration_lines(tmp_path / "two/train/epoch-2/Loss.log")) == 5
    assert not (tmp_path / "two/valid/epoch-7").exists()


def test_sigkill_between_validations_under_two_ranks_then_resume_is_bit_identical(tmp_path):
    straight = tmp_path / "straight"
    flags = (*LONG, "--checkpoint-every", "2")
    check(torchrun(str(straight / "artifacts"), str(straight / "final.pt"), *flags))
    resumed = tmp_path / "resumed"
    killed = torchrun(
        str(resumed / "artifacts"), str(resumed / "final.pt"), *flags, "--kill-at", "11"
    )
    assert killed.returncode != 0 and not (resumed / "final.pt").exists()
    check(torchrun(str(resumed / "artifacts"), str(resumed / "final.pt"), *flags))
    assert_params_close(resumed / "final.pt", straight / "final.pt", atol=0)
    for path in sorted((straight / "artifacts").rglob("*.log")):
        if path.name == "experiment.log":
            continue
        relative = path.relative_to(straight)
        assert (resumed / relative).read_bytes() == path.read_bytes(), relative


STAND_IN_SCONTROL = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/scontrol-calls.txt"
ls "$(dirname "$0")/artifacts/checkpoint" >> "$(dirname "$0")/scontrol-calls.txt"
"""


def test_sigterm_to_one_rank_stops_both_at_one_iteration_then_requeue_and_resume(tmp_path):
    """Rank 1 alone gets SIGTERM at its 5th step (epoch 1 of 8 iterations). Both ranks stop
    where they agree (the end of epoch 1's training: 8 < `sync_every`), rank 0 commits the
    checkpoint, then calls the stand-in `scontrol requeue $SLURM_JOB_ID` once; both exit 143.
    The resume starts at that checkpoint and ends as an uninterrupted run."""
    straight = tmp_path / "straight"
    check(torchrun(str(straight / "artifacts"), str(straight / "final.pt"), "--epochs", "3"))
    preempted, bin_dir = tmp_path / "preempted", tmp_path / "preempted"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(STAND_IN_SCONTROL)
    scontrol.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "4242"}
    flags = ("--epochs", "3", "--checkpoint-every", "3")
    stopped = torchrun(
        str(preempted / "artifacts"), str(preempted / "final.pt"), *flags,
        "--preempt-at", "5", "--preempt-rank", "1", "--requeue", env=env,
    )  # fmt: skip
    assert stopped.returncode != 0 and not (preempted / "final.pt").exists()
    assert "preempted code=143 rank=0" in stopped.stdout, stopped.stderr[-4000:]
    assert "preempted code=143 rank=1" in stopped.stdout
    assert "exitcode: 143" in stopped.stderr
    calls = (bin_dir / "scontrol-calls.txt").read_text().splitlines()
    assert calls[0] == "requeue 4242" and "requeue 4242" not in calls[1:]  # rank 0, once
    assert "epoch-1-iteration-8" in calls[1:]  # committed before the requeue
    log = (preempted / "artifacts" / "experiment.log").read_text()
    assert log.count("Preempted by SIGTERM: stopped at epoch 1, iteration 8") == 1
    assert "the SLURM job is requeued" in log
    check(torchrun(str(preempted / "artifacts"), str(preempted / "final.pt"), *flags))
    log = (preempted / "artifacts" / "experiment.log").read_text()
    assert "Resumed from checkpoint epoch-1-iteration-8," in log  # nothing redone
    assert_params_close(preempted / "final.pt", straight / "final.pt", atol=0)
    for split in ("train", "valid"):
        for epoch in (1, 2, 3):
            relative = f"artifacts/{split}/epoch-{epoch}/Loss.log"
            assert (preempted / relative).read_bytes() == (straight / relative).read_bytes()


@pytest.mark.parametrize("exit_code", [None, 0], ids=["default-143-restarts", "0-ends-the-job"])
def test_the_preemption_exit_code_decides_whether_torchrun_restarts_the_group(
    straight, tmp_path, exit_code
):
    """Under `torchrun --max-restarts=1`, a rank preempted in the first attempt exits with the
    preemption's code: a failure code (143) makes the agent restart the group, which resumes
    from the preemption's checkpoint and ends as an uninterrupted run; 0 ends the job there."""
    run = tmp_path / "run"
    flags = ["--checkpoint-every", "3", "--preempt-at", "5", "--preempt-rank", "1"]
    if exit_code is not None:
        flags += ["--exit-code", str(exit_code)]
    done = torchrun(str(run / "artifacts"), str(run / "final.pt"), *flags, restarts=1)
    assert "preempted code=" in done.stdout, done.stderr[-4000:]
    log = (run / "artifacts" / "experiment.log").read_text()
    assert log.count("Preempted by SIGTERM") == 1
    if exit_code is None:
        check(done)  # restarted, resumed, finished
        assert "Resumed from checkpoint epoch-1-iteration-8," in log
        assert_params_close(run / "final.pt", straight / "final.pt", atol=0)
    else:
        assert done.returncode == 0  # the agent saw a clean exit: no restart
        assert "Resumed from checkpoint" not in log and not (run / "final.pt").exists()
