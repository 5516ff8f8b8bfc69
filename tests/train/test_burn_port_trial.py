"""Issue 39, a Burn user's trial: Burn main's examples (custom-learning-strategy, simple-regression)
ported name by name, run on real MNIST. Each test writes Burn's lines as Burn writes them."""

from __future__ import annotations

import logging

import pytest
import torch

import burnish as bn
from burnish.errors import RecordError
from burnish.optim import AdamConfig
from burnish.record import ModuleRecord
from burnish.train import (
    Aggregate,
    Direction,
    EvaluatorBuilder,
    InferenceStep,
    Learner,
    LearnerBuilder,
    LearnerEvent,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
    SupervisedTraining,
    TrainingItem,
    TrainingStrategy,
    TrainStep,
    ValidStep,
)
from burnish.train.metric import AccuracyMetric, LossMetric, Metric
from burnish.train.parallel.execution_strategy import SupervisedLearningStrategy

from tests.train.helpers import Mlp, loaders

log = logging.getLogger(__name__)
SMALL = {"train_items": 128, "valid_items": 64, "batch_size": 32}


class MyCustomLearningStrategy(SupervisedLearningStrategy):
    """examples/custom-learning-strategy/src/training.rs, `fit`, line by line."""

    def __init__(self, device):
        self.device = device

    def fit(self, training_components, learner, dataloader_train, dataloader_valid, starting_epoch):
        dataloader_train = dataloader_train.to_device(self.device)
        train_total_items = dataloader_train.num_items()
        dataloader_valid = dataloader_valid.to_device(self.device)
        valid_total_items = dataloader_valid.num_items()
        learner.fork(self.device)
        event_processor = training_components.event_processor
        checkpointer = training_components.checkpointer
        interrupter = training_components.interrupter
        num_epochs = training_components.num_epochs

        for epoch in range(starting_epoch, num_epochs + 1):
            log.info("Executing training step for epoch %s", epoch)
            event_processor.process_train(LearnerEvent.StartSplit(epoch, train_total_items))
            iterator = dataloader_train.iter()
            iteration = 0
            for item in iterator:
                iteration += 1  # noqa: SIM113 (Burn's loop, verbatim)
                learner.lr_step()
                progress = iterator.progress()
                item = learner.train_step(item)
                learner.optimizer_step(item.grads)
                item = TrainingItem(item.item, progress, iteration, learner.lr_current())
                event_processor.process_train(LearnerEvent.ProcessedItem(item))
                if interrupter.should_stop():
                    reason = interrupter.get_message() or "Reason unknown"
                    log.info("Training interrupted: %s", reason)
                    break
            event_processor.process_train(LearnerEvent.EndSplit(epoch))

            model_valid = learner.model().valid()
            event_processor.process_valid(LearnerEvent.StartSplit(epoch, valid_total_items))
            iterator = dataloader_valid.iter()
            iteration = 0
            for item in iterator:
                progress = iterator.progress()
                iteration += 1  # noqa: SIM113 (Burn's loop, verbatim)
                item = InferenceStep.step(model_valid, item)
                item = TrainingItem(item, progress, iteration, None)
                event_processor.process_valid(LearnerEvent.ProcessedItem(item))
            event_processor.process_valid(LearnerEvent.EndSplit(epoch))
            event_processor.process_train(LearnerEvent.EndEpoch(epoch))

            if checkpointer is not None:
                checkpointer.checkpoint(learner, epoch, training_components.event_store)

        return learner.model(), event_processor


def run(artifact_dir, device, num_epochs=2):
    """The example's `run`, on an MNIST subset (the examples' numbers shrunk)."""
    bn.seed(42)
    model = Mlp()
    dataloader_train, dataloader_valid = loaders(**SMALL)
    early_stopping = MetricEarlyStoppingStrategy(
        LossMetric(),
        Aggregate.MEAN,
        Direction.LOWEST,
        Split.VALID,
        StoppingCondition.NoImprovementSince(n_epochs=5),
    )
    training = (
        SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)
        .metrics((AccuracyMetric(), LossMetric()))
        .with_default_checkpointers()
        .early_stopping(early_stopping)
        .num_epochs(num_epochs)
        .summary()
        .with_training_strategy(TrainingStrategy.Custom(MyCustomLearningStrategy(device)))
    )
    result = training.launch(Learner(model, AdamConfig().init(), 1e-3))
    result.model.into_record().save(f"{artifact_dir}/model")
    return result


def test_the_custom_strategy_example_logs_summarises_and_counts_its_epochs(
    tmp_path, capsys, caplog
):
    caplog.set_level(logging.INFO, logger=__name__)  # Burn's `log::info!` is on in Burn's example
    result = run(tmp_path, bn.device("cpu"))

    assert result.epochs_completed == 2
    assert not result.interrupted
    assert result.summary is not None and result.summary.epochs == 2
    out = capsys.readouterr().out
    assert "Learner Summary" in out and "Total Epochs: 2" in out
    experiment = (tmp_path / "experiment.log").read_text()
    assert "Executing training step for epoch 2" in experiment  # the strategy's own log lines
    assert "Model summary" in experiment
    assert sorted(p.name for p in (tmp_path / "valid").iterdir()) == ["epoch-1", "epoch-2"]


def test_simple_regressions_inference_loads_the_saved_model_by_its_name(tmp_path):
    result = run(tmp_path, bn.device("cpu"), num_epochs=1)
    artifact_dir = str(tmp_path)

    record = ModuleRecord.load(f"{artifact_dir}/model")  # inference.rs, as written
    model = Mlp().load_record(record)

    assert (tmp_path / "model.bpk").is_file() and not (tmp_path / "model").exists()
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(tensor, result.model.state_dict()[name])


def test_a_missing_record_names_both_paths_tried(tmp_path):
    with pytest.raises(RecordError, match=r"'[^']*model' nor '[^']*model\.bpk'\. Check the path"):
        ModuleRecord.load(f"{tmp_path}/model")
    with pytest.raises(RecordError, match=r"No Burnpack file at '[^']*model\.mpk'\. Check"):
        ModuleRecord.load(f"{tmp_path}/model.mpk")  # an extension: read as given, as Burn


def test_a_path_without_extension_that_exists_is_read_as_given(tmp_path):
    bn.seed(0)
    saved = Mlp().into_record().save(tmp_path / "model.bpk")
    saved.rename(tmp_path / "model")
    (tmp_path / "model.bpk").write_bytes(b"not read")  # Burn reads the existing path

    record = ModuleRecord.load(tmp_path / "model")

    assert set(record) == set(Mlp().state_dict())


def test_the_steps_static_form_calls_the_models_methods():
    bn.seed(0)
    model = Mlp()
    dataloader_train, _ = loaders(**SMALL)
    batch = next(iter(dataloader_train))

    output = TrainStep.step(model, batch)  # Burn: TrainStep::step(&model, item)
    item = InferenceStep.step(model.valid(), batch)  # Burn: InferenceStep::step(&model_valid, ..)

    assert bn.grad(model.linear2.bias, output.grads) is not None
    torch.testing.assert_close(item.loss, output.item.loss)
    torch.testing.assert_close(ValidStep.step(model.valid(), batch).output, item.output)
    assert isinstance(model, TrainStep) and isinstance(model, InferenceStep)
    assert not isinstance(object(), TrainStep)  # the protocols still ask for the method alone


def test_the_steps_static_form_names_a_missing_method():
    with pytest.raises(TypeError, match=r"calls `model\.train_step\(item\)`; object has no"):
        TrainStep.step(object(), None)
    with pytest.raises(TypeError, match=r"Step\.step\(model, item\)` calls `model\.valid_step"):
        InferenceStep.step(object(), None)


@pytest.mark.parametrize("form", ["tuple", "list", "varargs"])
def test_metrics_takes_burns_tuple_a_list_and_varargs(tmp_path, form):
    metrics = (AccuracyMetric(), LossMetric())
    args = {"tuple": (metrics,), "list": (list(metrics),), "varargs": metrics}[form]

    learner_metrics = LearnerBuilder(tmp_path).metrics(*args)._settings.metrics
    evaluator_metrics = EvaluatorBuilder(tmp_path).metrics(*args)._metrics

    for split in (Split.TRAIN, Split.VALID):
        assert [m.name for m in learner_metrics[split]] == ["Accuracy", "Loss"]
    assert [m.name for m in evaluator_metrics] == ["Accuracy", "Loss"]


def test_metrics_still_refuses_a_text_metric_inside_burns_tuple(tmp_path):
    class Text(Metric):
        name = "Text"

        def update(self, item, metadata):
            return None

    with pytest.raises(TypeError, match=r"`metrics` takes Numeric metrics; Text is not one"):
        LearnerBuilder(tmp_path).metrics((LossMetric(), Text()))


def test_stopping_conditions_burn_variant_is_no_improvement_since():
    assert StoppingCondition.NoImprovementSince(n_epochs=1) == (
        StoppingCondition.no_improvement_since(n_epochs=1)
    )
    with pytest.raises(ValueError, match=r"`n_epochs` must be an int >= 1\. Received: n_epochs=0"):
        StoppingCondition.NoImprovementSince(n_epochs=0)


def test_a_second_launch_of_the_same_training_says_it_replaces_the_first_run(tmp_path, recwarn):
    dataloader_train, dataloader_valid = loaders(**SMALL)
    training = (
        SupervisedTraining(tmp_path, dataloader_train, dataloader_valid)
        .metrics((LossMetric(),))
        .with_default_checkpointers()
        .num_epochs(1)
    )
    training.launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    assert not [w for w in recwarn if "already launched" in str(w.message)]

    with pytest.warns(UserWarning, match=r"already launched a run in .*Add `\.resume\(\)`"):
        result = training.launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    assert result.epochs_completed == 1

    recwarn.clear()
    resumed = training.num_epochs(2).resume().launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    assert resumed.epochs_completed == 2  # continued the run: no warning
    assert not [w for w in recwarn if "already launched" in str(w.message)]
