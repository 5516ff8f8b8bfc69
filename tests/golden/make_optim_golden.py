"""Writes optim_golden.json: Burn's optimizer formulas, step by step, in float64 NumPy.

Each formula is transcribed from tracel-ai/burn v0.19.1 (`crates/burn-optim/src/optim/*.rs`,
`grad_clipping/base.rs`): the adaptor clips the gradient first, then the optimizer adds the
weight decay, then applies its update. No torch here, so the numbers are independent of the
kernels burnish calls. Run: `.venv/bin/python tests/golden/make_optim_golden.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

LRS = [0.1, 0.05, 0.02]


def inputs():
    rng = np.random.default_rng(0)
    param = rng.normal(size=(2, 3)).round(4)
    grads = [rng.normal(size=(2, 3)).round(4) for _ in LRS]
    return param, grads


def clip(grad, mode, threshold):
    if mode == "value":
        return np.clip(grad, -threshold, threshold)
    coef = min(threshold / (np.sqrt((grad**2).sum()) + 1e-6), 1.0)
    return grad * coef


def sgd(param, grads, momentum, dampening, nesterov, penalty, clipping=None):
    velocity = None
    for lr, grad in zip(LRS, grads):
        if clipping:
            grad = clip(grad, *clipping)
        grad = param * penalty + grad
        if momentum is not None:
            velocity = grad if velocity is None else grad * (1 - dampening) + velocity * momentum
            grad = velocity * momentum + grad if nesterov else velocity
        param = param - grad * lr
    return param


def adam(param, grads, beta_1, beta_2, epsilon, penalty=0.0, decoupled=0.0, clipping=None):
    m = v = None
    for t, (lr, grad) in enumerate(zip(LRS, grads), start=1):
        if clipping:
            grad = clip(grad, *clipping)
        grad = param * penalty + grad
        m = grad * (1 - beta_1) if m is None else m * beta_1 + grad * (1 - beta_1)
        v = grad**2 * (1 - beta_2) if v is None else v * beta_2 + grad**2 * (1 - beta_2)
        update = (m / (1 - beta_1**t)) / (np.sqrt(v / (1 - beta_2**t)) + epsilon)
        param = param * (1 - lr * decoupled) - update * lr
    return param


def rmsprop(param, grads, alpha, momentum, epsilon, centered, penalty=0.0):
    square = grad_avg = buf = None
    for lr, grad in zip(LRS, grads):
        grad = param * penalty + grad
        square = grad**2 * (1 - alpha) if square is None else square * alpha + grad**2 * (1 - alpha)
        avg = square
        if centered:
            grad_avg = (
                grad * (1 - alpha) if grad_avg is None else grad_avg * alpha + grad * (1 - alpha)
            )
            avg = square - grad_avg**2
        grad = grad / (np.sqrt(avg) + epsilon)
        if momentum > 0:
            buf = grad if buf is None else buf * momentum + grad
            grad = buf
        param = param - grad * lr
    return param


def adagrad(param, grads, lr_decay, epsilon, penalty=0.0):
    total = None
    for t, (lr, grad) in enumerate(zip(LRS, grads), start=1):
        grad = param * penalty + grad
        total = grad**2 if total is None else total + grad**2
        new_lr = lr / (1 + (t - 1) * lr_decay)
        param = param - grad / (np.sqrt(total) + epsilon) * new_lr
    return param


def cases(param, grads):
    return {
        "sgd_plain": sgd(param, grads, None, 0.0, False, 0.0),
        "sgd_momentum_burn_defaults": sgd(param, grads, 0.9, 0.1, False, 0.0),
        "sgd_nesterov_dampening_decay": sgd(param, grads, 0.9, 0.5, True, 0.01),
        "sgd_clip_norm": sgd(param, grads, 0.9, 0.1, False, 0.0, ("norm", 0.5)),
        "sgd_clip_value": sgd(param, grads, None, 0.0, False, 0.0, ("value", 0.3)),
        "adam_burn_defaults": adam(param, grads, 0.9, 0.999, 1e-5),
        "adam_l2": adam(param, grads, 0.8, 0.99, 1e-5, penalty=0.1),
        "adamw_burn_defaults": adam(param, grads, 0.9, 0.999, 1e-5, decoupled=1e-4),
        "adamw_decay_clip": adam(param, grads, 0.9, 0.999, 1e-5, decoupled=0.1,
                                 clipping=("norm", 0.5)),
        "rmsprop_burn_defaults": rmsprop(param, grads, 0.99, 0.9, 1e-5, False),
        "rmsprop_centered_no_momentum": rmsprop(param, grads, 0.9, 0.0, 1e-5, True, 0.01),
        "adagrad_burn_defaults": adagrad(param, grads, 0.0, 1e-5),
        "adagrad_lr_decay": adagrad(param, grads, 0.1, 1e-5, 0.01),
    }  # fmt: skip


def main() -> None:
    param, grads = inputs()
    data = {
        "lrs": LRS,
        "param": param.tolist(),
        "grads": [g.tolist() for g in grads],
        "expected": {name: value.tolist() for name, value in cases(param, grads).items()},
    }
    path = Path(__file__).with_name("optim_golden.json")
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
