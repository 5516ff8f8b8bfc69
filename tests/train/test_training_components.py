"""Burn main's `TrainingComponents`, as Burn's `custom-learning-strategy` example uses them
(examples/custom-learning-strategy/src/training.rs): `MyCustomLearningStrategy::fit` ported
whole, its event-processor and checkpointer lines included, run by `SupervisedTraining`."""

from __future__ import annotations

import logging

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record.store.recorder import BurnpackFileRecorder
from burnish.train import Learner, LearnerEvent, SupervisedTraining, TrainingItem, TrainingStrategy
from burnish.train.checkpoint import FileCheckpointer, KeepLastNCheckpoints
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.parallel.execution_strategy import SupervisedLearningStrategy
from burnish.train.split import Split

from tests.train.helpers import Mlp, loaders

log = logging.getLogger(__name__)
SMALL = {"train_items": 128, "valid_items": 64, "batch_size": 32}


class MyCustomLearningStrategy(SupervisedLearningStrategy):
    def __init__(self, device):
        self.device = device
        self.epochs = []

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
            self.epochs.append(epoch)
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
                item = model_valid.valid_step(item)  # InferenceStep::step(&model_valid, item)
                item = TrainingItem(item, progress, iteration, None)
                event_processor.process_valid(LearnerEvent.ProcessedItem(item))
            event_processor.process_valid(LearnerEvent.EndSplit(epoch))
            event_processor.process_train(LearnerEvent.EndEpoch(epoch))

            if checkpointer is not None:
                checkpointer.checkpoint(learner, epoch, training_components.event_store)

        return learner.model(), event_processor


def training(artifact_dir, strategy, logger=None, num_epochs=3):
    dataloader_train, dataloader_valid = loaders(**SMALL)
    result = (
        SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)
        .metrics(AccuracyMetric(), LossMetric())
        .with_default_checkpointers()
        .with_checkpointing_strategy(KeepLastNCheckpoints(2))
        .num_epochs(num_epochs)
        .summary()
        .with_training_strategy(TrainingStrategy.Custom(strategy))
    )
    return result.with_metric_logger(logger) if logger is not None else result


def learner(seed=0):
    bn.seed(seed)
    return Learner(Mlp(), AdamConfig().init(), 1e-3)


def test_the_examples_strategy_logs_metrics_checkpoints_and_resumes(tmp_path):
    strategy, logger = MyCustomLearningStrategy(bn.device("cpu")), InMemoryMetricLogger()
    result = training(tmp_path, strategy, logger).launch(learner())

    assert strategy.epochs == [1, 2, 3]
    losses = [logger.read_numeric("Loss", epoch, Split.VALID) for epoch in (1, 2, 3)]
    assert all(len(entries) == 2 for entries in losses)  # 64 valid items, batches of 32
    assert [e.value for e in losses[2]] != [e.value for e in losses[0]]  # the model learned
    checkpoints = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert checkpoints == ["epoch-2", "epoch-3"]  # KeepLastNCheckpoints(2): epoch 1 deleted
    assert not result.model.training  # model.valid(), as Burn's LearningResult
    assert result.renderer is not None

    again = MyCustomLearningStrategy(bn.device("cpu"))
    resumed = training(tmp_path, again).checkpoint(2).launch(learner(seed=5))
    assert again.epochs == [3]  # starting_epoch = checkpoint + 1
    assert resumed.model.state_dict().keys() == result.model.state_dict().keys()


def test_the_loaded_checkpoint_is_what_the_loop_continues_from(tmp_path):
    training(tmp_path, MyCustomLearningStrategy(bn.device("cpu")), num_epochs=1).launch(learner())
    strategy = MyCustomLearningStrategy(bn.device("cpu"))
    components_model = {}

    def fit(training_components, learner, *rest):
        components_model.update(learner.model().state_dict())
        return learner.model(), training_components.event_processor

    strategy.fit = fit
    training(tmp_path, strategy, num_epochs=2).checkpoint(1).launch(learner(seed=9))
    record = FileCheckpointer(tmp_path / "checkpoint", BurnpackFileRecorder()).restore(1)["model"]
    assert components_model.keys() == record.keys()
    for name, tensor in components_model.items():  # epoch 1's weights, not seed 9's
        torch.testing.assert_close(tensor, record[name].to(tensor.dtype))


def test_a_strategy_without_fit_or_train_names_the_fix(tmp_path):
    class Empty(SupervisedLearningStrategy):
        pass

    with pytest.raises(NotImplementedError, match=r"Empty implements neither `fit\("):
        training(tmp_path, Empty()).launch(learner())


def test_the_event_processor_refuses_what_is_not_an_event(tmp_path):
    with pytest.raises(TypeError, match=r"takes a TrainingItem.*Received: dict"):
        LearnerEvent.ProcessedItem({})


def test_a_custom_strategy_resumes_from_an_epoch_only(tmp_path):
    strategy = MyCustomLearningStrategy(bn.device("cpu"))
    with pytest.raises(ValueError, match=r"resumes from `checkpoint\(epoch\)` only\. Received"):
        training(tmp_path, strategy).resume().launch(learner())
