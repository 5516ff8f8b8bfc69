"""The strong-Wolfe line search of L-BFGS (Burn main: `strong_wolfe`, `cubic_interpolate`).

Nocedal & Wright, 2006, "Numerical Optimization", algorithms 3.5 and 3.6 (bracketing, then
zoom), with the safeguarded cubic interpolation of minFunc, as Burn and `torch.optim.LBFGS`
implement them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

__all__ = ["ObjectiveFn", "cubic_interpolate", "strong_wolfe"]

#: `objective(x, t, d) -> (loss, flat_gradient)` at the point `x + t d`.
ObjectiveFn = Callable[[Tensor, float, Tensor], tuple[float, Tensor]]


def cubic_interpolate(
    x1: float,
    f1: float,
    g1: float,
    x2: float,
    f2: float,
    g2: float,
    bounds: tuple[float, float] | None = None,
) -> float:
    """The minimiser of the cubic through `(x1, f1)` and `(x2, f2)` with slopes `g1`, `g2`.

    Clamped to `bounds` (default: the interval between `x1` and `x2`); the middle of the
    bounds when the cubic has no real minimiser.
    """
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - _divide(3.0 * (f1 - f2), x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if not d2_square >= 0.0:  # no real minimiser (or NaN): the middle, as Burn
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        position = x2 - (x2 - x1) * _divide(g2 + d2 - d1, g2 - g1 + 2.0 * d2)
    else:
        position = x1 - (x1 - x2) * _divide(g1 + d2 - d1, g1 - g2 + 2.0 * d2)
    return _min(_max(position, low), high)


def _divide(a: float, b: float) -> float:
    """IEEE division (inf or NaN where b is 0), as Rust's and torch's floats divide."""
    try:
        return a / b
    except ZeroDivisionError:
        return (
            math.nan
            if a == 0.0 or math.isnan(a)
            else math.copysign(math.inf, a) * (math.copysign(1.0, b))
        )


def _max(a: float, b: float) -> float:
    """Rust's `f64::max`: the other number when one is NaN."""
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def _min(a: float, b: float) -> float:
    """Rust's `f64::min`: the other number when one is NaN."""
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


@dataclass
class _Sample:
    """A point of the line search: step `t`, loss `f`, gradient `g`, slope `gtd = g . d`."""

    t: float
    f: float
    g: Tensor
    gtd: float


def strong_wolfe(
    objective: ObjectiveFn,
    x: Tensor,
    t: float,
    d: Tensor,
    f: float,
    g: Tensor,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Tensor, float, int]:
    """A step `t` along `d` from `x` meeting the strong Wolfe conditions.

    Sufficient decrease `f(x + t d) <= f + c1 t gtd` and curvature `|g(x + t d) . d| <= -c2
    gtd`, found within `max_ls` evaluations if it can be.

    Returns:
        `(loss, flat_gradient, t, evaluations)` at the step chosen.
    """
    d_norm = float(d.abs().max())
    f_new, g_new = objective(x, t, d)
    evals, ls_iter = 1, 0
    gtd_new = float(g_new.dot(d))
    previous = _Sample(0.0, f, g, gtd)
    bracket: list[_Sample] | None = None
    while ls_iter < max_ls:
        current = _Sample(t, f_new, g_new, gtd_new)
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= previous.f):
            bracket = [previous, current]
            break
        if abs(gtd_new) <= -c2 * gtd:
            return f_new, g_new, t, evals
        if gtd_new >= 0.0:
            bracket = [previous, current]
            break
        bounds = (t + 0.01 * (t - previous.t), t * 10.0)
        t = cubic_interpolate(previous.t, previous.f, previous.gtd, t, f_new, gtd_new, bounds)
        previous = current
        f_new, g_new = objective(x, t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
    if bracket is None:
        bracket = [_Sample(0.0, f, g, gtd), _Sample(t, f_new, g_new, gtd_new)]
    return _zoom(objective, x, d, f, gtd, bracket, (c1, c2, tolerance_change, d_norm),
                 (evals, ls_iter, max_ls))  # fmt: skip


def _zoom(
    objective: ObjectiveFn,
    x: Tensor,
    d: Tensor,
    f: float,
    gtd: float,
    bracket: list[_Sample],
    constants: tuple[float, float, float, float],
    counts: tuple[int, int, int],
) -> tuple[float, Tensor, float, int]:
    """Shrink `bracket` until a point meets the strong Wolfe conditions (or the budget ends)."""
    c1, c2, tolerance_change, d_norm = constants
    evals, ls_iter, max_ls = counts
    insufficient_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
    while ls_iter < max_ls:
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd,
                              bracket[1].t, bracket[1].f, bracket[1].gtd)  # fmt: skip
        t, insufficient_progress = _away_from_the_ends(t, bracket, insufficient_progress)
        f_new, g_new = objective(x, t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
        sample = _Sample(t, f_new, g_new, gtd_new)
        if f_new > f + c1 * t * gtd or f_new >= bracket[low].f:
            bracket[high] = sample
        else:
            if abs(gtd_new) <= -c2 * gtd:
                return f_new, g_new, t, evals
            if gtd_new * (bracket[high].t - bracket[low].t) >= 0.0:
                bracket[high] = bracket[low]
            bracket[low] = sample
        low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
    best = bracket[low]
    return best.f, best.g, best.t, evals


def _away_from_the_ends(
    t: float, bracket: list[_Sample], insufficient_progress: bool
) -> tuple[float, bool]:
    """Move a trial step that lands within 10% of the bracket's ends back inside it."""
    low = min(bracket[0].t, bracket[1].t)
    high = max(bracket[0].t, bracket[1].t)
    margin = 0.1 * (high - low)
    if min(high - t, t - low) >= margin:
        return t, False
    if insufficient_progress or t >= high or t <= low:
        return (high - margin if abs(t - high) < abs(t - low) else low + margin), False
    return t, True
