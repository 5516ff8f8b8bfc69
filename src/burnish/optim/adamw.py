"""AdamW (Burn: `AdamWConfig` / `AdamW`)."""

from __future__ import annotations

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.adam import Adam, _check_betas
from burnish.optim.clipping import GradientClippingConfig

__all__ = ["AdamW", "AdamWConfig"]


@config
class AdamWConfig:
    """Configuration of `AdamW`, with Burn's defaults (`epsilon=1e-5`, `weight_decay=1e-4`).

    Args:
        beta_1: decay of the first moment.
        beta_2: decay of the second moment.
        epsilon: added to the square root of the second moment.
        weight_decay: decoupled decay rate: `p *= 1 - lr * weight_decay` each step.
        grad_clipping: per-tensor clipping applied first.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        _check_betas(self.beta_1, self.beta_2, self.epsilon)
        if not self.weight_decay >= 0.0:
            raise ConfigError(
                f"`weight_decay` must be >= 0. Received: weight_decay={self.weight_decay!r}."
            )

    def init(self) -> AdamW:
        """Build the optimizer."""
        return AdamW(self)


class AdamW(Adam):
    """AdamW: Loshchilov & Hutter, 2019, "Decoupled Weight Decay Regularization".

    Per step: `p *= 1 - lr * weight_decay`, then the Adam update of `Adam`.
    Runs `torch.optim.adam.adam(..., decoupled_weight_decay=True)`.
    """

    decoupled = True

    def _weight_decay(self) -> float:
        return self.config.weight_decay
