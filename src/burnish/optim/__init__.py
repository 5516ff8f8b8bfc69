"""Explicit gradients and optimizers (Burn's `burn::optim`).

grads = bn.backward(loss)
grads = GradientsParams.from_grads(grads, model)
model = optim.step(lr, model, grads)
"""

from burnish.optim.adagrad import AdaGrad, AdaGradConfig
from burnish.optim.adam import Adam, AdamConfig
from burnish.optim.adamw import AdamW, AdamWConfig
from burnish.optim.adan import Adan, AdanConfig
from burnish.optim.base import Optimizer
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.decay import WeightDecayConfig
from burnish.optim.grad_accum import GradientsAccumulator
from burnish.optim.grad_scaler import GradScaler
from burnish.optim.grads import Gradients, backward, grad
from burnish.optim.lbfgs import LBFGS, LBFGSConfig, LineSearchFn
from burnish.optim.module_optimizer import ModuleOptimizer
from burnish.optim.momentum import MomentumConfig
from burnish.optim.multi_grads import MultiGradientsParams
from burnish.optim.muon import AdjustLrFn, Muon, MuonConfig
from burnish.optim.non_finite import NonFiniteGuard
from burnish.optim.param_group import ParamGroup
from burnish.optim.params import GradientsParams, ParamId
from burnish.optim.rmsprop import RmsProp, RmsPropConfig
from burnish.optim.sgd import Sgd, SgdConfig

__all__ = [
    "AdaGrad",
    "AdaGradConfig",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "Adan",
    "AdanConfig",
    "AdjustLrFn",
    "GradScaler",
    "GradientClippingConfig",
    "Gradients",
    "GradientsAccumulator",
    "GradientsParams",
    "LBFGS",
    "LBFGSConfig",
    "LineSearchFn",
    "ModuleOptimizer",
    "MomentumConfig",
    "MultiGradientsParams",
    "Muon",
    "MuonConfig",
    "NonFiniteGuard",
    "Optimizer",
    "ParamGroup",
    "ParamId",
    "RmsProp",
    "RmsPropConfig",
    "Sgd",
    "SgdConfig",
    "WeightDecayConfig",
    "backward",
    "grad",
]
