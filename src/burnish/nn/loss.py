"""Loss functions with Burn's semantics (Burn: `burn::nn::loss`).

Each loss is a `torch.nn.Module` (callable as `loss(output, targets)`, or `loss.forward(...)`
as in Burn) built from a `@config` class, and returns a 0-dim tensor.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnish.config import config
from burnish.errors import ConfigError

__all__ = [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "HuberLoss",
    "HuberLossConfig",
    "MseLoss",
    "Reduction",
]


class Reduction(enum.Enum):
    """How an element-wise loss is reduced (`Auto` is `Mean`, as in Burn)."""

    Mean = "mean"
    Sum = "sum"
    Auto = "auto"


def _reduce(loss: Tensor, reduction: Reduction) -> Tensor:
    return loss.sum() if reduction is Reduction.Sum else loss.mean()


def _check_smoothing_and_weights(smoothing: float | None, weights: Sequence[float] | None) -> None:
    if smoothing is not None and not 0.0 <= smoothing <= 1.0:
        raise ConfigError(
            f"`smoothing` (label smoothing alpha) must be in [0, 1]. Received: {smoothing!r}."
        )
    if weights is not None and not all(w > 0 for w in weights):
        raise ConfigError(f"`weights` must all be positive. Received: weights={list(weights)}.")


@config
class CrossEntropyLossConfig:
    """Configuration of `CrossEntropyLoss` (Burn: `CrossEntropyLossConfig`).

    Args:
        pad_tokens: target classes whose items contribute zero loss (Burn's padding mask).
        smoothing: label-smoothing alpha in [0, 1]: targets become `(1 - a) onehot + a / C`.
        weights: a positive weight per class.
        logits: whether the input is raw logits (log-softmax applied) or probabilities.
    """

    pad_tokens: list[int] | None = None
    smoothing: float | None = None
    weights: list[float] | None = None
    logits: bool = True

    def init(self, device: torch.device | str | None = None) -> CrossEntropyLoss:
        """Build the loss on `device` (where the class weights live).

        Raises:
            ConfigError: if `smoothing` is outside [0, 1] or a weight is not positive.
        """
        _check_smoothing_and_weights(self.smoothing, self.weights)
        return CrossEntropyLoss(
            self.pad_tokens, device, smoothing=self.smoothing, weights=self.weights,
            logits=self.logits,
        )  # fmt: skip


class CrossEntropyLoss(nn.Module):
    """Cross-entropy of `[batch, classes]` outputs against `[batch]` class targets.

    Without padding, equals `F.cross_entropy(logits, targets, weight=weights,
    label_smoothing=smoothing)`. With `pad_tokens`, Burn's semantics: padded items count as
    zero loss but stay in the denominator (the mean over the whole batch, or the sum of the
    weights of all targets), unlike `ignore_index`.

    Args:
        pad_tokens: a class index or a list of them (Burn: `CrossEntropyLoss::new(pad, device)`).
        device: where the class weights live.
    """

    pad_tokens: torch.Tensor | None
    weights: torch.Tensor | None

    def __init__(
        self,
        pad_tokens: int | Sequence[int] | None = None,
        device: torch.device | str | None = None,
        *,
        smoothing: float | None = None,
        weights: Sequence[float] | None = None,
        logits: bool = True,
    ) -> None:
        super().__init__()
        _check_smoothing_and_weights(smoothing, weights)
        if isinstance(pad_tokens, int):
            pad_tokens = [pad_tokens]
        self.smoothing = smoothing
        self.logits = logits
        pads = None if pad_tokens is None else torch.tensor(list(pad_tokens), device=device)
        self.register_buffer("pad_tokens", pads, persistent=False)
        class_weights = None if weights is None else torch.tensor(list(weights), device=device)
        self.register_buffer("weights", class_weights, persistent=False)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The mean loss over the batch (a 0-dim tensor).

        Raises:
            ValueError: if `logits` is not 2-D or its batch size differs from `targets`'.
        """
        if logits.dim() != 2 or targets.shape != logits.shape[:1]:
            raise ValueError(
                "Expected logits [batch, classes] and targets [batch]. Received: logits "
                f"{list(logits.shape)}, targets {list(targets.shape)}."
            )
        if self.logits and self.pad_tokens is None and self.smoothing is None:
            # torch's fused kernels: two per pass where the general path below takes seven.
            return F.cross_entropy(logits, targets, weight=self.weights)
        log_probs = F.log_softmax(logits, dim=1) if self.logits else logits.log()
        mask = None if self.pad_tokens is None else torch.isin(targets, self.pad_tokens)
        if self.smoothing is None:
            loss = log_probs.gather(1, targets.unsqueeze(1)).squeeze(1)
        else:
            num_classes = log_probs.shape[1]
            smoothed = torch.full_like(log_probs, self.smoothing / num_classes)
            smoothed.scatter_add_(
                1, targets.unsqueeze(1), smoothed.new_full((len(targets), 1), 1 - self.smoothing)
            )
            per_class = log_probs * smoothed
            if self.weights is not None:
                per_class = per_class * self.weights
            loss = per_class.sum(1)
        if self.weights is not None and self.smoothing is None:
            loss = loss * self.weights[targets]
        if mask is not None:
            loss = loss.masked_fill(mask, 0.0)
        if self.weights is not None:
            return -loss.sum() / self.weights[targets].sum()
        return -loss.mean()


@config
class BinaryCrossEntropyLossConfig:
    """Configuration of `BinaryCrossEntropyLoss` (Burn: `BinaryCrossEntropyLossConfig`).

    Args:
        weights: a positive weight per class (per column for multi-label targets, per
            target value 0/1 for 1-D targets).
        smoothing: label-smoothing alpha in [0, 1]: `t (1 - a) + a / C` (C = 2 for 1-D).
        logits: whether the input is raw logits (default False: probabilities, as Burn).
    """

    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device: torch.device | str | None = None) -> BinaryCrossEntropyLoss:
        """Build the loss on `device`.

        Raises:
            ConfigError: if `smoothing` is outside [0, 1] or a weight is not positive.
        """
        _check_smoothing_and_weights(self.smoothing, self.weights)
        return BinaryCrossEntropyLoss(self.weights, self.smoothing, self.logits, device)


class BinaryCrossEntropyLoss(nn.Module):
    """Binary cross-entropy, mean over every element.

    Equals `F.binary_cross_entropy` (probabilities; logs clamped at -100) or
    `F.binary_cross_entropy_with_logits` when `logits=True`.
    """

    weights: torch.Tensor | None

    def __init__(
        self,
        weights: Sequence[float] | None = None,
        smoothing: float | None = None,
        logits: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.smoothing = smoothing
        self.logits = logits
        class_weights = None if weights is None else torch.tensor(list(weights), device=device)
        self.register_buffer("weights", class_weights, persistent=False)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The mean loss (a 0-dim tensor); `targets` are 0/1 (int or float), same shape.

        Raises:
            ValueError: if the shapes differ, or the weights do not match the classes.
        """
        if logits.shape != targets.shape:
            raise ValueError(
                "Expected targets of the same shape as the outputs. Received: outputs "
                f"{list(logits.shape)}, targets {list(targets.shape)}."
            )
        weights = self.weights
        if weights is not None and logits.dim() > 1 and len(weights) != logits.shape[-1]:
            raise ValueError(
                f"Expected one weight per class ({logits.shape[-1]}). Received "
                f"{len(weights)} weights."
            )
        target = targets.to(logits.dtype)
        if self.smoothing is not None:
            num_classes = logits.shape[-1] if logits.dim() > 1 else 2
            target = target * (1 - self.smoothing) + self.smoothing / num_classes
        if self.logits:
            loss = (1 - target) * logits - F.logsigmoid(logits)
        else:
            loss = (target - 1) * torch.log1p(-logits).clamp_min(-100.0) - target * (
                logits.log().clamp_min(-100.0)
            )
        if weights is not None:
            loss = loss * (weights if logits.dim() > 1 else weights[targets.long()])
        return loss.mean()


@config
class HuberLossConfig:
    """Configuration of `HuberLoss` (Burn: `HuberLossConfig`).

    Args:
        delta: where the loss turns from quadratic to linear, >= 0.
    """

    delta: float

    def init(self) -> HuberLoss:
        """Build the loss.

        Raises:
            ConfigError: if `delta` is negative or NaN.
        """
        if not self.delta >= 0.0:
            raise ConfigError(
                f"`delta` for the Huber loss must be >= 0. Received: delta={self.delta!r}."
            )
        return HuberLoss(self.delta)


class HuberLoss(nn.Module):
    """Huber loss: `r^2 / 2` if `|r| <= delta` else `delta (|r| - delta / 2)`, `r = t - p`.

    Equals `F.huber_loss(predictions, targets, delta=delta)`.
    """

    def __init__(self, delta: float) -> None:
        super().__init__()
        self.delta = delta

    def forward(
        self, predictions: Tensor, targets: Tensor, reduction: Reduction = Reduction.Mean
    ) -> Tensor:
        """The reduced loss (a 0-dim tensor)."""
        return _reduce(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The element-wise loss."""
        return F.huber_loss(predictions, targets, reduction="none", delta=self.delta)


class MseLoss(nn.Module):
    """Mean squared error (Burn: `MseLoss`); equals `F.mse_loss`."""

    def forward(
        self, predictions: Tensor, targets: Tensor, reduction: Reduction = Reduction.Mean
    ) -> Tensor:
        """The reduced loss (a 0-dim tensor)."""
        return _reduce(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The element-wise squared error."""
        return (predictions - targets).square()
