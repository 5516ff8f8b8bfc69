"""`TrainingResult.best_model()`: the best epoch's model in one call after `fit` (issue 41,
item 9). The run's valid "Scripted" metric is set epoch by epoch (tests/train/scripted.py), so
the best epoch is known in advance: 3 of (5, 4, 3, 9, 9), lowest."""

from __future__ import annotations

import pytest
import torch

from burnish.train import Direction, KeepLastNCheckpoints, TrainingListener

from tests.train import scripted

VALUES = (5.0, 4.0, 3.0, 9.0, 9.0)


class Weights(TrainingListener):
    """The trained weights at the end of each epoch's validation."""

    def __init__(self) -> None:
        self.by_epoch = {}

    def on_validation_end(self, event):
        self.by_epoch[event.epoch] = scripted.parameters(event.model)


def fit(tmp_path, strategy_name="composed"):
    weights = Weights()
    configured = scripted.builder(
        tmp_path, epochs=len(VALUES), strategy_name=strategy_name, values=VALUES, stop=False
    ).with_listener(weights)
    learner = scripted.build(configured)
    train, valid = scripted.loaders()
    return learner.fit(train, valid), weights.by_epoch


def assert_weights(model, expected):
    actual = scripted.parameters(model)
    assert actual.keys() == expected.keys()
    for name, tensor in actual.items():
        assert torch.equal(tensor, expected[name]), name  # full-precision checkpoint


def test_best_model_is_the_epoch_the_metric_strategy_kept(tmp_path):
    result, weights = fit(tmp_path)
    last = scripted.parameters(result.model)
    best = result.best_model()
    assert_weights(best, weights[3])
    assert not torch.equal(weights[3]["linear1.weight"], weights[5]["linear1.weight"])
    assert_weights(result.model, last)  # a copy: the result's model is unchanged
    assert best is not result.model
    assert not best.training and not any(p.requires_grad for p in best.parameters())
    assert type(best) is scripted.Regression


def test_best_model_under_a_metric_given(tmp_path):
    result, weights = fit(tmp_path, strategy_name="composed")
    # The highest "Scripted": epochs 4 and 5 tie at 9, the first wins (Burn's store); the
    # composed strategy's KeepLastNCheckpoints(2) kept epoch 4.
    best = result.best_model("Scripted", Direction.HIGHEST)
    assert_weights(best, weights[4])


def test_best_model_refuses_an_epoch_the_strategy_did_not_keep(tmp_path):
    result, _ = fit(tmp_path, strategy_name="metric")
    with pytest.raises(ValueError, match=r"best epoch, 4, has no checkpoint.*kept: epoch-3"):
        result.best_model("Scripted", "highest")


def test_best_model_without_a_metric_strategy_asks_for_a_metric(tmp_path):
    result, weights = fit(tmp_path, strategy_name="keep")
    with pytest.raises(ValueError, match=r"has 0 MetricCheckpointingStrategy.*best_model\("):
        result.best_model()
    with pytest.raises(ValueError, match=r"needs a `direction`"):
        result.best_model("Scripted")
    assert_weights(result.best_model("Scripted", Direction.HIGHEST), weights[4])


def test_best_model_of_a_run_without_checkpoints_says_so(tmp_path):
    configured = scripted.builder(tmp_path, epochs=2, values=VALUES, stop=False)
    configured = configured.with_checkpointing_strategy(KeepLastNCheckpoints(1))
    configured = configured._set("checkpointing", recorder=None)  # no `with_file_checkpointer`
    result = scripted.build(configured).fit(*scripted.loaders())
    with pytest.raises(ValueError, match=r"wrote no checkpoints.*with_file_checkpointer"):
        result.best_model()


def test_best_model_names_a_metric_without_values(tmp_path):
    result, _ = fit(tmp_path)
    with pytest.raises(ValueError, match=r"no valid values of 'Accuracy'"):
        result.best_model("Accuracy", Direction.HIGHEST)


# With `valid_every(2)` on 4 iterations an epoch, validation N is the valid split's epoch N:
# 1 and 3 run inside epochs 1 and 2 (after iteration 2), 2 and 4 at their ends.
class EachValidation(TrainingListener):
    """The trained weights at the end of each validation, in order."""

    def __init__(self) -> None:
        self.weights = []

    def on_validation_end(self, event):
        self.weights.append(scripted.parameters(event.model))


def fit_every(tmp_path, values, strategy_name="metric", epochs=2, stop=False):
    listener = EachValidation()
    configured = scripted.builder(
        tmp_path, epochs=epochs, strategy_name=strategy_name, values=values, stop=stop
    )
    learner = scripted.build(configured.valid_every(2).with_listener(listener))
    return learner.fit(*scripted.loaders()), listener.weights


def test_best_model_with_valid_every_loads_the_epoch_end_checkpoint(tmp_path):
    result, weights = fit_every(tmp_path, (5.0, 4.0, 9.0, 3.0))  # best: validation 4
    assert scripted.checkpoints(tmp_path) == ["epoch-2"]  # validation 4 ended epoch 2
    assert_weights(result.best_model(), weights[3])


def test_best_model_with_valid_every_loads_a_validation_inside_an_epoch(tmp_path):
    result, weights = fit_every(tmp_path, (5.0, 4.0, 3.0, 9.0))  # best: validation 3
    # its checkpoint, and the last epoch's, which a run always keeps
    assert scripted.checkpoints(tmp_path) == ["epoch-2", "epoch-2-iteration-2"]
    best = result.best_model()
    assert_weights(best, weights[2])
    assert not torch.equal(weights[2]["linear1.weight"], weights[3]["linear1.weight"])


def test_best_model_with_valid_every_and_early_stopping_inside_an_epoch(tmp_path):
    # Lowest: 1; no improvement in 2 and 3: the run stops at validation 3, inside epoch 2,
    # and its checkpoint is epoch-2's. Highest: validation 3, held by that checkpoint.
    result, weights = fit_every(
        tmp_path, (3.0, 4.0, 9.0, 9.0, 9.0, 9.0), "composed", epochs=3, stop=True
    )
    assert result.stopped_early and len(weights) == 3
    assert "epoch-2" in scripted.checkpoints(tmp_path)
    assert_weights(result.best_model("Scripted", Direction.HIGHEST), weights[2])


def test_best_model_with_valid_every_names_a_validation_inside_an_epoch_not_kept(tmp_path):
    result, _ = fit_every(tmp_path, (3.0, 4.0, 5.0, 9.0), "keep")  # keeps the last 2
    with pytest.raises(
        ValueError,
        match=r"best validation, 1, ran inside epoch 1 \(after train iteration 2\).*"
        r"did not keep epoch-1-iteration-2 \(kept: epoch-2-iteration-2, epoch-2\)",
    ):
        result.best_model("Scripted", Direction.LOWEST)
