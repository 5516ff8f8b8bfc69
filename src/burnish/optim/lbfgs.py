"""L-BFGS (Burn main: `LBFGSConfig` / `LBFGS`, `LineSearchFn`): a closure-based step."""

from __future__ import annotations

import enum
from collections.abc import Callable
from itertools import compress
from operator import attrgetter
from typing import Any, TypeVar, cast

import torch
from torch import Tensor, nn

from burnish.config import config
from burnish.errors import ConfigError, RecordError
from burnish.optim.base import _check_lr
from burnish.optim.line_search import strong_wolfe
from burnish.optim.param_table import param_table
from burnish.optim.params import GradientsParams

__all__ = ["LBFGS", "LBFGSConfig", "LineSearchFn"]

M = TypeVar("M", bound=nn.Module)
#: `closure(model)` returns the loss (a scalar tensor), or Burn's `(loss, GradientsParams)`.
Closure = Callable[[Any], Any]
_RECORD_VERSION = 1
_REQUIRES_GRAD = attrgetter("requires_grad")
_CURVATURE_MIN = 1e-10  # a pair (s, y) enters the history only when y . s exceeds it


class LineSearchFn(enum.Enum):
    """The line search of `LBFGSConfig` (Burn's `LineSearchFn`; its `None` is Python's None)."""

    StrongWolfe = "strong_wolfe"


@config
class LBFGSConfig:
    """Configuration of `LBFGS`, with Burn's (and `torch.optim.LBFGS`'s) defaults.

    Args:
        max_iter: iterations per `step`.
        history_size: the number of `(s, y)` pairs kept.
        tolerance_grad: stop when the largest gradient element is at most this.
        tolerance_change: stop when the step or the loss changes by less than this.
        max_eval: closure evaluations per `step` (None: `max_iter * 5 // 4`).
        line_search_fn: `LineSearchFn.StrongWolfe`, or None for a fixed step `lr`.
    """

    max_iter: int = 20
    history_size: int = 100
    tolerance_grad: float = 1e-7
    tolerance_change: float = 1e-9
    max_eval: int | None = None
    line_search_fn: LineSearchFn | None = None

    def __post_init__(self) -> None:
        for name in ("max_iter", "history_size", "max_eval"):
            value = getattr(self, name)
            if value is None and name == "max_eval":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"`{name}` must be an int >= 1. Received: {name}={value!r}.")
        for name in ("tolerance_grad", "tolerance_change"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ConfigError(f"`{name}` must be >= 0. Received: {name}={value!r}.")
        if self.line_search_fn is not None and not isinstance(self.line_search_fn, LineSearchFn):
            raise ConfigError(
                "`line_search_fn` must be LineSearchFn.StrongWolfe or None. Received: "
                f"{self.line_search_fn!r}. (torch's 'strong_wolfe' is LineSearchFn.StrongWolfe.)"
            )

    def init(self) -> LBFGS:
        """Build the optimizer."""
        return LBFGS(self)


class LBFGS:
    """Limited-memory BFGS (Liu & Nocedal, 1989), ported from `torch.optim.LBFGS` by Burn.

    Unlike the other optimizers, L-BFGS evaluates the loss several times per step, so its
    `step` takes a closure instead of gradients (Burn: `step(lr, module, closure)`):

        >>> model, loss = lbfgs.step(lr, model, lambda m: loss_fn(m(x), y))

    The closure receives the model (its parameters set to the point to evaluate) and
    returns the loss as a scalar tensor, whose gradients burnish then takes for the model's
    trainable parameters, or Burn's pair `(loss, GradientsParams)`. A missing gradient is
    zero. `step` returns the model (updated in place) and the loss at the last point
    evaluated, a float, as Burn's does (`torch.optim.LBFGS.step` returns the first).

    All trainable parameters are one flat vector; the state (history of displacements
    `history_s` and gradient changes `history_y`, the last direction `d` and step `t`, the
    previous gradient and loss, the iteration count `g_iter`) is global, not per parameter.
    L-BFGS reads the loss and a few dot products back on the host at every iteration, by
    nature; it is meant for small, deterministic problems (full-batch fits, physics, style
    transfer), not for the Learner.
    """

    def __init__(self, config: LBFGSConfig) -> None:
        self.config = config
        self.max_eval = config.max_eval or config.max_iter * 5 // 4
        self._state: dict[str, Any] = _empty_state()

    def step(self, lr: float, model: M, closure: Closure) -> tuple[M, float]:
        """Run up to `max_iter` L-BFGS iterations on `model`; return `(model, loss)`.

        Args:
            lr: the learning rate (the step length without line search; the first trial
                step of the line search).
            model: the module whose trainable parameters are optimized (in place).
            closure: `closure(model) -> loss` or `-> (loss, GradientsParams)`.

        Raises:
            TypeError: if `closure` is not callable (gradients are not accepted: L-BFGS
                must evaluate the loss at points of its choosing).
        """
        lr = _check_lr(lr)
        if not callable(closure):
            raise TypeError(
                "LBFGS.step takes a closure, `closure(model) -> loss`, because it evaluates "
                f"the loss several times per step. Received: {type(closure).__name__}. "
                "Pass e.g. `lambda m: loss_fn(m(inputs), targets)`; L-BFGS cannot be the "
                "Learner's optimizer (the Learner passes gradients): use it in a custom loop."
            )
        params = _trainable(model)
        loss, flat_grad = self._evaluate(closure, model, params)
        self._place(flat_grad)
        if float(flat_grad.abs().max()) <= self.config.tolerance_grad:
            return model, loss
        with torch.no_grad():
            x = torch.cat(tuple(map(torch.ravel, params)))
        loss = self._iterate(lr, model, params, closure, (x, loss, flat_grad))
        return model, loss

    def _iterate(
        self,
        lr: float,
        model: Any,
        params: list[Tensor],
        closure: Closure,
        start: tuple[Tensor, float, Tensor],
    ) -> float:
        cfg, state = self.config, self._state
        x, loss, flat_grad = start
        d = state["d"] if state["d"] is not None else -flat_grad
        t = state["t"] if state["t"] is not None else lr
        prev_flat_grad, evals = state["prev_flat_grad"], 1
        for _ in range(cfg.max_iter):
            state["g_iter"] += 1
            if state["g_iter"] == 1:
                d = -flat_grad
                state["history_s"], state["history_y"] = [], []
            else:
                if prev_flat_grad is not None:
                    self._remember(d * t, flat_grad - prev_flat_grad)
                d = self._direction(flat_grad)
            prev_flat_grad, prev_loss = flat_grad, loss
            if state["g_iter"] == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr
            else:
                t = lr
            gtd = float(flat_grad.dot(d))
            if gtd > -cfg.tolerance_change:
                break
            loss, flat_grad, t, used = self._move(model, params, closure, (x, t, d),
                                                  (loss, flat_grad, gtd), evals)  # fmt: skip
            x = torch.add(x, d, alpha=t)
            evals += used
            if self._converged(evals, flat_grad, d * t, loss - prev_loss):
                break
        state.update(d=d, t=t, prev_flat_grad=prev_flat_grad, prev_loss=loss)
        return loss

    def _move(
        self,
        model: Any,
        params: list[Tensor],
        closure: Closure,
        line: tuple[Tensor, float, Tensor],
        here: tuple[float, Tensor, float],
        evals: int,
    ) -> tuple[float, Tensor, float, int]:
        """Step from `x` along `d`: a strong-Wolfe search, or a fixed step `t`."""
        x, t, d = line
        loss, flat_grad, gtd = here
        if self.config.line_search_fn is LineSearchFn.StrongWolfe:

            def objective(point: Tensor, step: float, direction: Tensor) -> tuple[float, Tensor]:
                _write(params, torch.add(point, direction, alpha=step))
                return self._evaluate(closure, model, params)

            loss, flat_grad, t, used = strong_wolfe(
                objective, x, t, d, loss, flat_grad, gtd,
                tolerance_change=self.config.tolerance_change, max_ls=self.max_eval - evals,
            )  # fmt: skip
            _write(params, torch.add(x, d, alpha=t))
            return loss, flat_grad, t, used
        _write(params, torch.add(x, d, alpha=t))
        loss, flat_grad = self._evaluate(closure, model, params)
        return loss, flat_grad, t, 1

    def _converged(self, evals: int, flat_grad: Tensor, step: Tensor, change: float) -> bool:
        cfg = self.config
        return (
            evals >= self.max_eval
            or float(flat_grad.abs().max()) <= cfg.tolerance_grad
            or float(step.abs().max()) <= cfg.tolerance_change
            or abs(change) < cfg.tolerance_change
        )

    def _remember(self, s: Tensor, y: Tensor) -> None:
        """Add the pair `(s, y)` when its curvature `y . s` is positive enough."""
        if float(y.dot(s)) > _CURVATURE_MIN:
            history_s, history_y = self._state["history_s"], self._state["history_y"]
            if len(history_s) >= self.config.history_size:
                del history_s[0], history_y[0]
            history_s.append(s)
            history_y.append(y)

    def _direction(self, flat_grad: Tensor) -> Tensor:
        """`-H g`: the two-loop recursion over the history, `H0 = (y . s) / (y . y)`.

        The coefficients are read back as floats and applied with `add(..., alpha=)`, the
        rounding of `torch.optim.LBFGS` (L-BFGS amplifies any difference over iterations).
        """
        history_s, history_y = self._state["history_s"], self._state["history_y"]
        q = -flat_grad
        if not history_s:
            return q
        rhos = [y.dot(s).reciprocal() for s, y in zip(history_s, history_y)]
        alphas: list[float] = [0.0] * len(history_s)
        for i in reversed(range(len(history_s))):  # over the history, not the parameters
            alphas[i] = float(history_s[i].dot(q) * rhos[i])
            q = q.add(history_y[i], alpha=-alphas[i])
        r = q * (history_y[-1].dot(history_s[-1]) / history_y[-1].dot(history_y[-1]))
        for s, y, rho, alpha in zip(history_s, history_y, rhos, alphas):
            r = r.add(s, alpha=alpha - float(y.dot(r) * rho))
        return r

    def _evaluate(self, closure: Closure, model: Any, params: list[Tensor]) -> tuple[float, Tensor]:
        """The closure's loss (a float) and the flat gradient of `params`."""
        with torch.enable_grad():
            result = closure(model)
        if isinstance(result, tuple) and len(result) == 2:
            loss, grads = result
            flat = _flat_from_grads_params(grads, model, params)
        else:
            loss = result
            if not isinstance(loss, Tensor) or loss.numel() != 1:
                raise TypeError(
                    "The L-BFGS closure must return the loss as a scalar tensor, or "
                    f"(loss, GradientsParams). Received: {type(loss).__name__}."
                )
            grads = torch.autograd.grad(loss, params, allow_unused=True, materialize_grads=True)
            flat = torch.cat(tuple(map(torch.ravel, grads)))
        return float(loss.detach() if isinstance(loss, Tensor) else loss), flat.detach()

    def _place(self, flat_grad: Tensor) -> None:
        """Move a loaded state to the gradients' device and dtype (a no-op once there)."""
        state = self._state
        reference = state["prev_flat_grad"]
        if reference is None or (
            reference.device == flat_grad.device and reference.dtype == flat_grad.dtype
        ):
            return
        like = {"device": flat_grad.device, "dtype": flat_grad.dtype}
        for key in ("history_s", "history_y"):
            state[key] = [tensor.to(**like) for tensor in state[key]]
        for key in ("d", "prev_flat_grad"):
            if state[key] is not None:
                state[key] = state[key].to(**like)

    # -- records -----------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The state: `{"optimizer": "LBFGS", "version", "state": {...}}` (tensors copied)."""
        return {"optimizer": "LBFGS", "version": _RECORD_VERSION, "state": _copy(self._state)}

    def load_record(self, record: dict[str, Any]) -> LBFGS:
        """Replace the state with `record` (from `to_record`); returns self.

        Raises:
            RecordError: if the record is not an L-BFGS record.
        """
        if not isinstance(record, dict) or record.get("optimizer") != "LBFGS":
            kind = record.get("optimizer") if isinstance(record, dict) else type(record).__name__
            raise RecordError(
                f"Expected a record from LBFGS.to_record(). Received one from {kind!r}. Load "
                "it with the optimizer that saved it."
            )
        state = record.get("state")
        missing = set(_empty_state()) - set(state) if isinstance(state, dict) else {"state"}
        if missing:
            raise RecordError(
                f"This L-BFGS record lacks {sorted(missing)}: it was not made by "
                "LBFGS.to_record(), or is damaged."
            )
        self._state = _copy(cast("dict[str, Any]", state))
        return self

    def __repr__(self) -> str:
        return f"LBFGS(history={len(self._state['history_s'])}, g_iter={self._state['g_iter']})"


def _empty_state() -> dict[str, Any]:
    return {
        "history_s": [],
        "history_y": [],
        "d": None,
        "t": None,
        "prev_flat_grad": None,
        "prev_loss": None,
        "g_iter": 0,
    }


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    def copy(value: Any) -> Any:
        if isinstance(value, Tensor):
            return value.detach().clone()
        if isinstance(value, list):
            return [copy(item) for item in value]
        return value

    return {key: copy(value) for key, value in state.items()}


def _trainable(model: nn.Module) -> list[Tensor]:
    """The model's parameters that require gradients, in `named_parameters()` order."""
    params = param_table(model).params
    trainable = list(compress(params, map(_REQUIRES_GRAD, params)))
    if not trainable:
        raise ValueError(
            f"LBFGS found no trainable parameter in the {type(model).__name__} given to step: "
            "every parameter has requires_grad=False. Unfreeze the parameters to optimize."
        )
    return trainable


def _write(params: list[Tensor], flat: Tensor) -> None:
    """Copy the flat vector into the parameters, in place and without autograd."""
    with torch.no_grad():
        pieces = torch.split(flat, list(map(Tensor.numel, params)))
        torch._foreach_copy_(params, list(map(Tensor.view_as, pieces, params)))


def _flat_from_grads_params(grads: Any, model: nn.Module, params: list[Tensor]) -> Tensor:
    if not isinstance(grads, GradientsParams):
        raise TypeError(
            "An L-BFGS closure returning a pair must return (loss, GradientsParams). "
            f"Received a {type(grads).__name__} as the second item."
        )
    _, present, values = grads._take_for(model)
    if len(present) != len(params):  # gradients missing: zeros, as torch.optim.LBFGS
        by_id = dict(zip(map(id, present), values))
        values = [by_id.get(id(p), torch.zeros_like(p)) for p in params]
    return torch.cat(tuple(map(torch.ravel, values)))
