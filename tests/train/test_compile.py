"""`LearnerBuilder.compile(...)`: the compiled model trains to the same parameters as eager,
within float tolerance, and the user's model is left uncompiled afterwards."""

import pytest
import torch

import burnish as bn
from burnish.optim import SgdConfig

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
    eager_valid = (tmp_path / "eager/valid/epoch-1/Loss.log").read_text().splitlines()
    compiled_valid = (tmp_path / "compiled/valid/epoch-1/Loss.log").read_text().splitlines()
    for a, b in zip(eager_valid, compiled_valid):
        assert abs(float(a.split(",")[0]) - float(b.split(",")[0])) < 1e-4
