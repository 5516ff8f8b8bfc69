"""SGD momentum (Burn: `MomentumConfig`)."""

from __future__ import annotations

from burnish.config import config

__all__ = ["MomentumConfig"]


@config
class MomentumConfig:
    """Heavy-ball or Nesterov momentum for `SgdConfig`, with Burn's defaults.

    With velocity `v`, gradient `g`, momentum `mu` and dampening `tau`:
    the first step sets `v = g`; later steps `v = mu * v + (1 - tau) * g`. The update uses
    `v`, or `g + mu * v` with Nesterov (Sutskever et al., 2013, "On the importance of
    initialization and momentum in deep learning"). Unlike `torch.optim.SGD`, Nesterov
    may be combined with a non-zero dampening.

    Args:
        momentum: the factor `mu` (Burn default 0.9).
        dampening: the factor `tau` (Burn default 0.1; PyTorch's is 0).
        nesterov: use Nesterov momentum.
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False
