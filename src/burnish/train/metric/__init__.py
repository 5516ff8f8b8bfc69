"""Training metrics (Burn's `burn::train::metric`).

The protocol (`Metric`, `Numeric`, entries, metadata, `Adaptor`) is in `base.py`; the shared
on-device accumulation in `state.py`; one file per metric family. See train/README.md for
how the learner drives them.
"""

from burnish.train.metric.accuracy import (
    AccuracyInput,
    AccuracyMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
)
from burnish.train.metric.auroc import AurocInput, AurocMetric
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
from burnish.train.metric.classification import (
    ClassReduction,
    ConfusionStatsInput,
    FBetaScoreMetric,
    PrecisionMetric,
    RecallMetric,
)
from burnish.train.metric.hamming import HammingScore, HammingScoreInput
from burnish.train.metric.learning_rate import LearningRateMetric
from burnish.train.metric.loss import LossInput, LossMetric
from burnish.train.metric.perplexity import PerplexityInput, PerplexityMetric
from burnish.train.metric.skipped_steps import SkippedStepsMetric
from burnish.train.metric.speed import IterationSpeedMetric
from burnish.train.metric.state import NumericMetricState, StatefulNumeric
from burnish.train.metric.system import CpuMemory, CpuUse, CudaMetric
from burnish.train.metric.throughput import ThroughputMetric
from burnish.train.metric.torchmetric import TorchMetric, TorchMetricInput

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
    "AurocInput",
    "ConfusionStatsInput",
    "HammingScoreInput",
    "LossInput",
    "PerplexityInput",
    "TopKAccuracyInput",
    "TorchMetricInput",
    # metrics
    "AccuracyMetric",
    "AurocMetric",
    "ClassReduction",
    "CpuMemory",
    "CpuUse",
    "CudaMetric",
    "FBetaScoreMetric",
    "HammingScore",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossMetric",
    "PerplexityMetric",
    "PrecisionMetric",
    "RecallMetric",
    "ThroughputMetric",
    "SkippedStepsMetric",
    "TopKAccuracyMetric",
    "TorchMetric",
]
