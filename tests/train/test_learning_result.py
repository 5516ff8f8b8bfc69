"""What `fit`/`launch` hand back (Burn main's `LearningResult { model, renderer }`): the model
for inference (`model.valid()`), and the renderer; written as a Burn user writes it."""

from __future__ import annotations

import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import CompactRecorder
from burnish.train import EvaluatorBuilder, Learner, LearningResult, SupervisedTraining
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders

SMALL = {"train_items": 128, "valid_items": 64}


def launch(artifact_dir, model, renderer=None) -> LearningResult:
    """Burn main's guide: `SupervisedTraining::new(..).launch(Learner::new(model, optim, lr))`."""
    dataloader_train, dataloader_test = loaders(**SMALL)
    training = (
        SupervisedTraining(artifact_dir, dataloader_train, dataloader_test)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(renderer or CliMetricsRenderer())
        .num_epochs(1)
    )
    return training.launch(Learner(model, AdamConfig().init(), 1e-3))


def test_the_result_model_infers_as_burns_valid_model(tmp_path):
    # let result = training.launch(..); let model = result.model;
    # let output = model.forward(images); (twice: Burn's inner model has no dropout)
    bn.seed(0)
    result = launch(tmp_path, Mlp(dropout=0.5))
    model = result.model
    images = next(iter(loaders(**SMALL)[1])).images

    output_1 = model.forward(images)
    output_2 = model.forward(images)

    torch.testing.assert_close(output_1, output_2)
    assert not model.training and not output_1.requires_grad  # eval mode, no autograd


def test_the_training_model_keeps_its_mode_and_shares_the_result_parameters(tmp_path):
    bn.seed(0)
    trained = Mlp(dropout=0.5)
    learner = Learner(trained, AdamConfig().init(), 1e-3)
    dataloader_train, dataloader_test = loaders(**SMALL)
    result = (
        SupervisedTraining(tmp_path, dataloader_train, dataloader_test)
        .metrics(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .launch(learner)
    )
    assert learner.model() is trained and trained.training
    for (name, param), twin in zip(trained.named_parameters(), result.model.parameters()):
        assert twin.data_ptr() == param.data_ptr(), name  # the same storage, no copy
        assert not twin.requires_grad


def test_the_result_model_saves_as_the_trained_model(tmp_path):
    # result.model.save_file(format!("{artifact_dir}/model"), &CompactRecorder::new())
    bn.seed(0)
    trained = Mlp()
    result = launch(tmp_path, trained)
    path = result.model.save_file(tmp_path / "model", CompactRecorder())

    loaded = Mlp().load_file(path, CompactRecorder(), "cpu")

    for name, tensor in trained.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor, atol=2e-3, rtol=2e-3)


def test_a_learner_given_the_result_model_continues_training_the_trained_model(tmp_path):
    bn.seed(0)
    trained = Mlp()
    result = builder(tmp_path / "first", epochs=1).build(trained, AdamConfig().init(), 1e-3)
    result = result.fit(*loaders(**SMALL))
    before = {k: v.clone() for k, v in trained.state_dict().items()}

    learner = builder(tmp_path / "second", epochs=1).build(result.model, AdamConfig().init(), 1e-2)
    again = learner.fit(*loaders(**SMALL))

    assert learner.model() is trained
    moved = [k for k, v in trained.state_dict().items() if not torch.equal(v, before[k])]
    assert moved == list(before)  # every parameter trained on
    torch.testing.assert_close(again.model.linear1.weight, trained.linear1.weight)
    assert torch.equal(result.model.linear1.weight, trained.linear1.weight)  # a view of it


def test_the_result_gives_back_the_renderer_for_the_evaluation(tmp_path):
    # let renderer = result.renderer;
    # EvaluatorBuilder::new(dir).renderer(renderer).metrics(..).build(result.model)
    renderer = CliMetricsRenderer()
    bn.seed(0)
    result = launch(tmp_path, Mlp(), renderer)
    assert result.renderer is renderer

    evaluator = (
        EvaluatorBuilder(tmp_path)
        .renderer(result.renderer)
        .metrics(AccuracyMetric(), LossMetric())
        .build(result.model)
    )
    evaluated = evaluator.eval("mnist-test", loaders(**SMALL)[1])
    assert (tmp_path / "test" / "mnist-test").is_dir()
    assert evaluated is not None


def test_learning_result_is_burn_mains_name_for_the_training_result():
    from burnish.train import TrainingResult

    assert LearningResult is TrainingResult
