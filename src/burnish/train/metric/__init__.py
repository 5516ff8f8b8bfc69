"""Training metrics (Burn's `burn::train::metric`).

The protocol (`Metric`, `Numeric`, entries, metadata, `Adaptor`) is in `base.py`; the shared
on-device accumulation in `state.py`; one file per metric family. See train/README.md for
how the learner drives them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use
    from burnish.train.metric.accuracy import (
        AccuracyInput,
        AccuracyMetric,
        TopKAccuracyInput,
        TopKAccuracyMetric,
    )
    from burnish.train.metric.auc_pr import AucPrMetric
    from burnish.train.metric.auroc import AurocMetric
    from burnish.train.metric.base import (
        Adaptor,
        Metric,
        MetricEntry,
        MetricMetadata,
        Numeric,
        NumericEntry,
        Progress,
        adapt,
        format_float,
    )
    from burnish.train.metric.bleu import BleuInput, BleuScore, BleuSmoothing
    from burnish.train.metric.classification import (
        ClassReduction,
        ConfusionStatsInput,
        FBetaScoreMetric,
        PrecisionMetric,
        RecallMetric,
    )
    from burnish.train.metric.cpu_temperature import CpuTemperature
    from burnish.train.metric.error_rate import CerInput, CharErrorRate, WerInput, WordErrorRate
    from burnish.train.metric.hamming import HammingScore, HammingScoreInput
    from burnish.train.metric.learning_rate import LearningRateMetric
    from burnish.train.metric.loss import LossInput, LossMetric
    from burnish.train.metric.perplexity import PerplexityInput, PerplexityMetric
    from burnish.train.metric.rouge import RougeLInput, RougeLScore
    from burnish.train.metric.skipped_steps import SkippedStepsMetric
    from burnish.train.metric.speed import IterationSpeedMetric
    from burnish.train.metric.state import NumericMetricState, StatefulNumeric
    from burnish.train.metric.system import CpuMemory, CpuUse, CudaMetric
    from burnish.train.metric.throughput import ThroughputMetric
    from burnish.train.metric.torchmetric import TorchMetric, TorchMetricInput
    from burnish.train.metric.vision import (
        DiceInput,
        DiceMetric,
        DiceMetricConfig,
        MsSsimInput,
        MsSsimMetric,
        MsSsimMetricConfig,
        PsnrInput,
        PsnrMetric,
        PsnrMetricConfig,
        SsimInput,
        SsimMetric,
        SsimMetricConfig,
    )

# name -> defining module, imported on first access (PEP 562): reading logs needs no torch.
_LAZY = {
    "AccuracyInput": "burnish.train.metric.accuracy",
    "AccuracyMetric": "burnish.train.metric.accuracy",
    "Adaptor": "burnish.train.metric.base",
    "AucPrMetric": "burnish.train.metric.auc_pr",
    "AurocMetric": "burnish.train.metric.auroc",
    "BleuInput": "burnish.train.metric.bleu",
    "BleuScore": "burnish.train.metric.bleu",
    "BleuSmoothing": "burnish.train.metric.bleu",
    "CerInput": "burnish.train.metric.error_rate",
    "CharErrorRate": "burnish.train.metric.error_rate",
    "DiceInput": "burnish.train.metric.vision",
    "DiceMetric": "burnish.train.metric.vision",
    "DiceMetricConfig": "burnish.train.metric.vision",
    "MsSsimInput": "burnish.train.metric.vision",
    "MsSsimMetric": "burnish.train.metric.vision",
    "MsSsimMetricConfig": "burnish.train.metric.vision",
    "PsnrInput": "burnish.train.metric.vision",
    "PsnrMetric": "burnish.train.metric.vision",
    "PsnrMetricConfig": "burnish.train.metric.vision",
    "RougeLInput": "burnish.train.metric.rouge",
    "RougeLScore": "burnish.train.metric.rouge",
    "SsimInput": "burnish.train.metric.vision",
    "SsimMetric": "burnish.train.metric.vision",
    "SsimMetricConfig": "burnish.train.metric.vision",
    "WerInput": "burnish.train.metric.error_rate",
    "WordErrorRate": "burnish.train.metric.error_rate",
    "ClassReduction": "burnish.train.metric.classification",
    "ConfusionStatsInput": "burnish.train.metric.classification",
    "CpuMemory": "burnish.train.metric.system",
    "CpuTemperature": "burnish.train.metric.cpu_temperature",
    "CpuUse": "burnish.train.metric.system",
    "CudaMetric": "burnish.train.metric.system",
    "FBetaScoreMetric": "burnish.train.metric.classification",
    "HammingScore": "burnish.train.metric.hamming",
    "HammingScoreInput": "burnish.train.metric.hamming",
    "IterationSpeedMetric": "burnish.train.metric.speed",
    "LearningRateMetric": "burnish.train.metric.learning_rate",
    "LossInput": "burnish.train.metric.loss",
    "LossMetric": "burnish.train.metric.loss",
    "Metric": "burnish.train.metric.base",
    "MetricEntry": "burnish.train.metric.base",
    "MetricMetadata": "burnish.train.metric.base",
    "Numeric": "burnish.train.metric.base",
    "NumericEntry": "burnish.train.metric.base",
    "NumericMetricState": "burnish.train.metric.state",
    "PerplexityInput": "burnish.train.metric.perplexity",
    "PerplexityMetric": "burnish.train.metric.perplexity",
    "PrecisionMetric": "burnish.train.metric.classification",
    "Progress": "burnish.train.metric.base",
    "RecallMetric": "burnish.train.metric.classification",
    "SkippedStepsMetric": "burnish.train.metric.skipped_steps",
    "StatefulNumeric": "burnish.train.metric.state",
    "ThroughputMetric": "burnish.train.metric.throughput",
    "TopKAccuracyInput": "burnish.train.metric.accuracy",
    "TopKAccuracyMetric": "burnish.train.metric.accuracy",
    "TorchMetric": "burnish.train.metric.torchmetric",
    "TorchMetricInput": "burnish.train.metric.torchmetric",
    "adapt": "burnish.train.metric.base",
    "format_float": "burnish.train.metric.base",
}

__all__ = [
    # protocol
    "Adaptor",
    "Metric",
    "MetricEntry",
    "MetricMetadata",
    "Numeric",
    "NumericEntry",
    "NumericMetricState",
    "Progress",
    "StatefulNumeric",
    "adapt",
    "format_float",
    # inputs
    "AccuracyInput",
    "BleuInput",
    "CerInput",
    "ConfusionStatsInput",
    "DiceInput",
    "HammingScoreInput",
    "LossInput",
    "MsSsimInput",
    "PerplexityInput",
    "PsnrInput",
    "RougeLInput",
    "SsimInput",
    "TopKAccuracyInput",
    "TorchMetricInput",
    "WerInput",
    # metrics
    "AccuracyMetric",
    "AucPrMetric",
    "AurocMetric",
    "BleuScore",
    "BleuSmoothing",
    "CharErrorRate",
    "ClassReduction",
    "CpuMemory",
    "CpuTemperature",
    "CpuUse",
    "CudaMetric",
    "DiceMetric",
    "DiceMetricConfig",
    "FBetaScoreMetric",
    "HammingScore",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossMetric",
    "MsSsimMetric",
    "MsSsimMetricConfig",
    "PerplexityMetric",
    "PrecisionMetric",
    "PsnrMetric",
    "PsnrMetricConfig",
    "RecallMetric",
    "RougeLScore",
    "SsimMetric",
    "SsimMetricConfig",
    "ThroughputMetric",
    "SkippedStepsMetric",
    "TopKAccuracyMetric",
    "TorchMetric",
    "WordErrorRate",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
