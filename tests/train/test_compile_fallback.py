"""`compile(step=True)` when torch's compiler fails on the step (issue 43, item 3): the fit
trains on eagerly, to the same weights as an eager fit, after one warning that names the error
and how to switch compiling off. The compiler here is a real `torch.compile` backend, passed
through burnish's compile options, that raises when it is handed the step's graph (as
Inductor's scheduler did on a GPT: `InductorError`, a `BackendCompilerFailed`)."""

from __future__ import annotations

import warnings

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.train.loop.compile_fallback import CompileFallbackWarning, compile_failure

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, builder, loaders

pytestmark = pytest.mark.slow  # dynamo traces the step: seconds


class FailingBackend:
    """A torch.compile backend that is handed each graph and fails to compile it."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, graph: torch.fx.GraphModule, example_inputs):
        self.graphs += 1
        raise RuntimeError("planted: this backend cannot lower the step's graph")


def fit(artifact_dir, **compile_options):
    bn.seed(3)
    b = builder(artifact_dir, epochs=2)
    if compile_options:
        b = b.compile(**compile_options)
    learner = b.build(Mlp(dropout=0.0), AdamConfig().init(), 1e-2)
    # 200 items in batches of 32: six full batches and a partial one (a second graph shape)
    return learner.fit(*loaders(batch_size=32, train_items=200, valid_items=64))


def test_a_failing_compiler_falls_back_to_eager_once_and_trains_the_same(tmp_path):
    backend = FailingBackend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fallen = fit(tmp_path / "fallback", step=True, backend=backend)
    eager = fit(tmp_path / "eager")
    assert fallen.epochs_completed == 2 and not fallen.interrupted
    assert backend.graphs == 1  # tried once: no new attempt per iteration or batch shape
    for name, tensor in eager.model.state_dict().items():
        assert torch.equal(fallen.model.state_dict()[name], tensor), name
    for relative in ("train/epoch-1/Loss.log", "train/epoch-2/Accuracy.log"):
        assert iteration_lines(tmp_path / "fallback" / relative) == iteration_lines(
            tmp_path / "eager" / relative
        )
    log = (tmp_path / "fallback" / "experiment.log").read_text()
    assert log.count("torch's compiler failed on the train step") == 1, log
    said = [w for w in caught if issubclass(w.category, CompileFallbackWarning)]
    assert len(said) <= 1  # the same line, once, where no announcer takes it
    line = next(x for x in log.splitlines() if "torch's compiler failed" in x)
    assert "BackendCompilerFailed" in line and "planted: this backend cannot lower" in line
    assert "leave out `.compile(step=True, ...)`" in line and "Training goes on" in line


class GraphBreak(Mlp):
    """A train step that a full graph cannot hold: not a compiler failure."""

    def train_step(self, batch):
        torch._dynamo.graph_break()
        return super().train_step(batch)


def test_a_graph_break_is_still_an_error_not_a_fallback(tmp_path):
    bn.seed(3)
    learner = (
        builder(tmp_path, epochs=1)
        .compile(step=True, backend="eager")
        .build(GraphBreak(dropout=0.0), AdamConfig().init(), 1e-2)
    )
    with pytest.raises(torch._dynamo.exc.Unsupported) as raised:
        learner.fit(*loaders(batch_size=32, train_items=64, valid_items=32))
    assert not compile_failure(raised.value)
    assert "torch's compiler failed" not in (tmp_path / "experiment.log").read_text()


def test_what_counts_as_the_compilers_failure():
    from torch._dynamo.exc import BackendCompilerFailed, InternalTorchDynamoError
    from torch._inductor.exc import InductorError

    # torch's constructors change between releases: instances made without them
    for kind in (BackendCompilerFailed, InductorError, InternalTorchDynamoError):
        assert compile_failure(kind.__new__(kind)), kind  # issue 43's was an InductorError
    assert not compile_failure(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not compile_failure(ValueError("the step's own error"))
