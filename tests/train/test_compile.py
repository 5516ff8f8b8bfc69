"""`LearnerBuilder.compile(...)`: the compiled model trains to the same parameters as eager,
within float tolerance, and the user's model is left uncompiled afterwards."""

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig, AdamWConfig, RmsPropConfig, SgdConfig

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, builder, loaders

pytestmark = pytest.mark.slow


def run(artifact_dir, compile_options=None):
    bn.seed(6)
    b = builder(artifact_dir, epochs=1)
    if compile_options is not None:
        b = b.compile(**compile_options)
    model = Mlp(dropout=0.0)
    result = b.build(model, SgdConfig().init(), 0.05).fit(
        *loaders(batch_size=32, train_items=192, valid_items=64)
    )
    return result.model


def test_compiled_training_matches_eager(tmp_path):
    # aot_eager traces through dynamo and AOTAutograd like inductor but skips code generation,
    # which takes minutes on a small CPU; benchmarks/ runs the inductor path.
    from torch._dynamo.utils import counters

    counters.clear()
    eager = run(tmp_path / "eager")
    compiled = run(tmp_path / "compiled", {"backend": "aot_eager", "dynamic": False})
    assert counters["stats"]["unique_graphs"] >= 2  # train and valid forwards were compiled
    for name, tensor in eager.state_dict().items():
        torch.testing.assert_close(compiled.state_dict()[name], tensor, atol=1e-5, rtol=1e-5)
    assert "forward" not in compiled.__dict__  # restored after fit
    eager_valid = iteration_lines(tmp_path / "eager/valid/epoch-1/Loss.log")
    compiled_valid = iteration_lines(tmp_path / "compiled/valid/epoch-1/Loss.log")
    for a, b in zip(eager_valid, compiled_valid):
        assert abs(float(a.split(",")[0]) - float(b.split(",")[0])) < 1e-4


# -- compile(step=True): train_step and the optimizer step as one graph ------------------------

STEP = {"step": True, "backend": "aot_eager"}


def fit_step(artifact_dir, compile_options, optim=None, epochs=2, stop_at=None, dropout=0.0, **b):
    """A run over 200 training items in batches of 32: six full batches and a partial one.

    `b` calls builder methods: `devices=["cuda"]` calls `.devices(["cuda"])`.
    """
    from burnish.lr_scheduler import ExponentialLrSchedulerConfig
    from burnish.record import DefaultRecorder

    from tests.train.test_learner import StopAt

    bn.seed(9)
    learner_builder = builder(artifact_dir, epochs=epochs, recorder=DefaultRecorder()).resume()
    if compile_options is not None:
        learner_builder = learner_builder.compile(**compile_options)
    for method, value in b.items():
        learner_builder = getattr(learner_builder, method)(value)
    if stop_at is not None:
        interrupter = learner_builder.interrupter()
        learner_builder = learner_builder.metric_train_numeric(StopAt(interrupter, stop_at))
    scheduler = ExponentialLrSchedulerConfig(1e-2, 0.9)  # a new lr every iteration
    learner = learner_builder.build(Mlp(dropout), optim or AdamConfig().init(), scheduler)
    return learner.fit(*loaders(batch_size=32, train_items=200, valid_items=64))


def log_values(path):
    return [float(line.split(",")[0]) for line in iteration_lines(path)]


@pytest.mark.parametrize("optim", [AdamConfig(), AdamWConfig(), SgdConfig()], ids=type)
def test_compiled_step_matches_eager_with_one_graph_per_batch_shape(tmp_path, optim):
    from torch._dynamo.utils import counters

    eager = fit_step(tmp_path / "eager", None, optim.init())
    counters.clear()
    compiled = fit_step(tmp_path / "compiled", STEP, optim.init())
    # 14 iterations with 14 learning rates: one graph for the batches of 32, one for the last
    # batch of 8, and validation stays eager.
    assert counters["stats"]["unique_graphs"] == 2
    for name, tensor in eager.model.state_dict().items():
        torch.testing.assert_close(compiled.model.state_dict()[name], tensor, atol=1e-5, rtol=1e-4)
    for relative in (
        "train/epoch-2/Loss.log",
        "train/epoch-2/Accuracy.log",
        "valid/epoch-2/Loss.log",
    ):
        expected = log_values(tmp_path / "eager" / relative)
        assert len(expected) == 7 if relative.startswith("train") else 2
        assert log_values(tmp_path / "compiled" / relative) == pytest.approx(expected, rel=1e-4)


def test_compiled_step_under_bf16_autocast_trains_float32_parameters(tmp_path):
    result = fit_step(tmp_path, STEP, epochs=1, mixed_precision="bf16")
    fit_step(tmp_path / "eager", None, epochs=1, mixed_precision="bf16")
    assert all(p.dtype == torch.float32 for p in result.model.parameters())
    assert log_values(tmp_path / "train/epoch-1/Loss.log")[-1] == pytest.approx(
        log_values(tmp_path / "eager/train/epoch-1/Loss.log")[-1], rel=1e-4
    )


def test_compiled_step_interrupted_then_resumed_is_exact(tmp_path):
    straight = fit_step(tmp_path / "straight", STEP, dropout=0.2)
    stopped = fit_step(tmp_path / "resumed", STEP, dropout=0.2, stop_at=4)
    assert stopped.interrupted and stopped.epochs_completed == 0
    resumed = fit_step(tmp_path / "resumed", STEP, dropout=0.2)
    assert resumed.epochs_completed == 2
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    for relative in ("train/epoch-1/Loss.log", "valid/epoch-2/Accuracy.log"):
        assert (tmp_path / "resumed" / relative).read_bytes() == (
            tmp_path / "straight" / relative
        ).read_bytes()


@pytest.mark.parametrize(
    ("configure", "optim", "match"),
    [
        (lambda b: b, RmsPropConfig(), "Sgd, Adam and AdamW"),
        (lambda b: b.grads_accumulation(2), AdamConfig(), "cannot accumulate"),
        (lambda b: b.mixed_precision("fp16"), AdamConfig(), "float16"),
        (lambda b: b.strategy("fsdp"), AdamConfig(), "one process"),
    ],
    ids=["optimizer", "accumulation", "fp16", "fsdp"],
)
def test_compiled_step_refuses_what_it_cannot_run_at_build(tmp_path, configure, optim, match):
    b = configure(builder(tmp_path).compile(step=True))
    with pytest.raises(ValueError, match=match):
        b.build(Mlp(), optim.init(), 1e-3)


def test_the_default_compile_still_compiles_the_forward_only(tmp_path):
    learner = builder(tmp_path).compile(backend="eager").build(Mlp(), SgdConfig().init(), 0.1)
    assert (
        learner.options.compilation.kwargs == {"backend": "eager"}
        and not learner.options.compilation.whole_step
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
def test_compiled_step_replayed_as_a_cuda_graph_matches_eager(tmp_path):
    options = {"step": True, "mode": "reduce-overhead"}
    cuda = {"devices": ["cuda"]}
    eager = fit_step(tmp_path / "eager", None, **cuda)
    compiled = fit_step(tmp_path / "graphs", options, **cuda)
    for name, tensor in eager.model.state_dict().items():
        torch.testing.assert_close(compiled.model.state_dict()[name], tensor, atol=1e-4, rtol=1e-3)
    expected = log_values(tmp_path / "eager/train/epoch-2/Loss.log")
    assert log_values(tmp_path / "graphs/train/epoch-2/Loss.log") == pytest.approx(
        expected, rel=1e-3
    )
