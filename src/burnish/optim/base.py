"""The optimizer interface (Burn: `Optimizer` + `OptimizerAdaptor`).

An optimizer is functional in Burn's sense: `model = optim.step(lr, model, grads)` applies
the given gradients with the given learning rate to the parameters present in `grads`, and
nothing else. Per-parameter state is created lazily, keyed by parameter id (the qualified
name relative to the module given to `step`), and the arithmetic is PyTorch's own functional
foreach/fused kernels. One optimizer steps one model (and its forks): stepping another live
module whose names its state already holds is refused, since the two would share state.
"""

from __future__ import annotations

import math
import os
import weakref
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

import torch
from torch import Tensor, nn

from burnish.errors import RecordError
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.kernel_state import STEP_DTYPE
from burnish.optim.param_table import unwrap
from burnish.optim.params import GradientsParams
from burnish.value_builder import ValueBuilder

if TYPE_CHECKING:
    from burnish.optim.module_optimizer import ModuleOptimizer
    from burnish.optim.multi_grads import MultiGradientsParams
    from burnish.optim.param_group import ParamGroup

__all__ = ["Optimizer"]

M = TypeVar("M", bound=nn.Module)
_RECORD_VERSION = 1


class Optimizer(ValueBuilder, ABC):
    """Base class of burnish's optimizers: `step`, `to_record`, `load_record`.

    Subclasses implement `_new_state(param)` (the state of a parameter's first step) and
    `_update(lr, params, grads, states)` (one call to a torch functional kernel).

    `with_grad_clipping` and `with_group` return a new optimizer and leave this one as it
    was; the new one holds a copy of this one's state (none before the first step), never
    this one's tensors.
    """

    _copies_state = True
    # The optimizer of parameter groups, which `with_group` and a rate per group wrap this
    # one in: `ModuleOptimizer`, a subclass, names itself (`class ModuleOptimizer(Optimizer,
    # groups=True)`), so that this module never imports its own subclass.
    _module_optimizer_class: ClassVar[type[ModuleOptimizer]]

    def __init_subclass__(cls, groups: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if groups:
            Optimizer._module_optimizer_class = cast("type[ModuleOptimizer]", cls)

    def __init__(self, grad_clipping: GradientClippingConfig | None = None) -> None:
        self.grad_clipping = grad_clipping
        self._states: dict[str, dict[str, Any]] = {}
        self._unplaced: set[str] = set()
        # State is keyed by names relative to the module given to `step`: the module that
        # created each entry, and the module of the last step (checked when it changes).
        self._owners: dict[str, weakref.ref[nn.Module]] = {}
        self._module: weakref.ref[nn.Module] | None = None

    def step(self, lr: float, model: M, grads: GradientsParams) -> M:
        """Apply `grads` to `model`'s parameters with learning rate `lr`; return `model`.

        Only the parameters present in `grads` move; their gradients are removed from
        `grads` (consumed). Parameters are updated in place, without autograd.

        Args:
            lr: the learning rate of this step (a float).
            model: the module holding the parameters (a DDP wrapper is accepted).
            grads: from `GradientsParams.from_grads` / `from_module` / `from_params`.

        Raises:
            TypeError: if `lr` is not a real number or `grads` is not a GradientsParams.

        Example:
            >>> import torch
            >>> import burnish as bn
            >>> from burnish.optim import AdamConfig, GradientsParams
            >>> model, optim = torch.nn.Linear(3, 1), AdamConfig().init()
            >>> before = model.weight.detach().clone()
            >>> loss = model(torch.ones(2, 3)).mean()
            >>> grads = GradientsParams.from_grads(bn.backward(loss), model)
            >>> model = optim.step(1e-3, model, grads)
            >>> bool((model.weight != before).all()), grads.is_empty()
            (True, True)
            >>> sorted(optim.to_record()["state"])  # Adam's state, per parameter id
            ['bias', 'weight']
        """
        return self._step(lr, model, grads, None)

    def _step(self, lr: float, model: M, grads: GradientsParams, found_inf: Tensor | None) -> M:
        """`step`, skipped where `found_inf` (a device flag from `GradScaler`) is nonzero.

        A `ModuleLearningRate` with a rate per group (from `ModuleLrScheduler.with_group`)
        is applied group by group, as Burn's `init()` (a `ModuleOptimizer`) does.
        """
        if type(lr) is not float and len(getattr(lr, "lrs", ())) > 1:
            return self._as_module_optimizer()._step(lr, model, grads, found_inf)
        if not (isinstance(lr, Tensor) and torch.compiler.is_compiling()):
            lr = _check_lr(lr)  # a compiled step passes a device tensor: no recompile per value
        if not isinstance(grads, GradientsParams):
            raise TypeError(
                "`grads` must be a GradientsParams (GradientsParams.from_grads(grads, model)). "
                f"Received: {type(grads).__name__}."
            )
        names, params, grad_list = grads._take_for(model)
        return self._apply(lr, model, names, params, grad_list, found_inf)

    def _apply(
        self,
        lr: float,
        model: M,
        names: list[str],
        params: list[Tensor],
        grad_list: list[Tensor],
        found_inf: Tensor | None,
        clip: bool = True,
    ) -> M:
        """The step on parameters already paired with their gradients (names relative to
        `model`); `clip=False` when the caller clipped them (`ModuleOptimizer`)."""
        if not params:
            return model
        if not torch.compiler.is_compiling():
            module = unwrap(model)
            if self._module is None or self._module() is not module:
                self._check_owners(module, names)  # only when the module changes
        with torch.no_grad():
            if clip and self.grad_clipping is not None:
                grad_list = self.grad_clipping.clip(grad_list)
            states = self._states_of(names, params)
            if found_inf is None:
                self._update(lr, params, grad_list, states)
            else:
                self._update_unless(found_inf, lr, params, grad_list, states)
        return model

    # -- records -----------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The optimizer state: `{"optimizer", "version", "state": {param_id: {...}}}`.

        Tensors are copies (a snapshot, as Burn's records are values); step counters are
        Python ints.
        """
        state = {
            name: {key: _snapshot(key, value) for key, value in entry.items()}
            for name, entry in self._states.items()
        }
        return {"optimizer": type(self).__name__, "version": _RECORD_VERSION, "state": state}

    def load_record(self, record: dict[str, Any]) -> Optimizer:
        """Replace the state with `record` (from `to_record`); returns self.

        Tensors are copied, and moved to their parameter's device and dtype at its next step.

        Raises:
            RecordError: if the record is not one of this optimizer's.
        """
        if not isinstance(record, dict) or "state" not in record:
            raise RecordError(
                f"Expected an optimizer record from {type(self).__name__}.to_record(). "
                f"Received: {type(record).__name__}."
            )
        kind = record.get("optimizer")
        if kind != type(self).__name__:
            raise RecordError(
                f"This record was saved by optimizer {kind!r}; it cannot be loaded into "
                f"{type(self).__name__}. Load it with the optimizer that saved it."
            )
        self._states = {
            name: {key: self._restore(key, value) for key, value in entry.items()}
            for name, entry in record["state"].items()
        }
        self._unplaced = set(self._states)
        self._owners, self._module = {}, None  # the state belongs to the next module stepped
        return self

    def save(self, path: str | os.PathLike, recorder: Any = None) -> Path:
        """Save the optimizer state to a file (Burn main: `optim.save(path)`).

        Args:
            path: the file; the recorder's extension is added when missing.
            recorder: a burnish recorder (default: `NamedMpkFileRecorder(
                DoublePrecisionSettings())`, which gives back every float dtype exactly).

        Returns:
            The path written.
        """
        from burnish.optim.file import save_optimizer

        return save_optimizer(self, path, recorder)

    def load(
        self,
        path: str | os.PathLike,
        recorder: Any = None,
        device: torch.device | str | None = None,
    ) -> Optimizer:
        """Load the state `save` wrote (Burn main: `optim.load(path)?`); returns self.

        Raises:
            RecordError: if the file is missing or not this optimizer's record.
        """
        from burnish.optim.file import load_optimizer

        return load_optimizer(self, path, recorder, device)

    def with_grad_clipping(self, grad_clipping: GradientClippingConfig) -> Optimizer:
        """Clip the gradients of every step with `grad_clipping`: a new optimizer (Burn main:
        `ModuleOptimizer::with_grad_clipping`, the first group's clipping).

        Raises:
            TypeError: if `grad_clipping` is not a GradientClippingConfig.
        """
        if not isinstance(grad_clipping, GradientClippingConfig):
            raise TypeError(
                "`grad_clipping` must be a GradientClippingConfig (GradientClippingConfig."
                f"value(x) / .norm(x)). Received: {grad_clipping!r}."
            )
        new = self._replace()
        new.grad_clipping = grad_clipping  # a property on ModuleOptimizer: set, not replaced
        return new

    def has_gradient_clipping(self) -> bool:
        """Whether the gradients are clipped (Burn main: `has_gradient_clipping()`)."""
        return self.grad_clipping is not None

    def step_multi(self, lr: float, model: M, grads: MultiGradientsParams) -> M:
        """`step` with gradients from several sources (devices), summed per parameter
        (Burn main: `ModuleOptimizer::step_multi`).

        Raises:
            TypeError: if `grads` is not a MultiGradientsParams.
        """
        from burnish.optim.multi_grads import MultiGradientsParams

        if not isinstance(grads, MultiGradientsParams):
            raise TypeError(
                "`step_multi` takes a MultiGradientsParams (its `grads` a list of "
                f"`(GradientsParams, device)`). Received: {type(grads).__name__}. For one "
                "GradientsParams, call `step(lr, model, grads)`."
            )
        return self.step(lr, model, grads.into_params(model))

    def with_group(
        self,
        group: ParamGroup,
        optim: Optimizer | Any,
        grad_clipping: GradientClippingConfig | None = None,
    ) -> ModuleOptimizer:
        """This optimizer for every parameter, `optim` for those in `group` (Burn main's
        `ModuleOptimizer::with_group`): `ModuleOptimizer(self).with_group(...)`."""
        return self._module_optimizer_class(self).with_group(group, optim, grad_clipping)

    def _as_module_optimizer(self) -> ModuleOptimizer:
        """This optimizer as the only group of a `ModuleOptimizer` (made once): the same
        state, clipping and updates, with a rate per lr group (Burn: `ModuleOptimizer::from`).
        """
        view = self.__dict__.get("_module_view")
        if view is None:
            view = self.__dict__["_module_view"] = self._module_optimizer_class(self)
        view._clipping[0] = self.grad_clipping  # may have changed since (with_grad_clipping)
        return view

    def _drop_state(self, names: set[str]) -> None:
        """Forget the state of the parameters `names` (their next step starts afresh)."""
        for name in names:
            self._states.pop(name, None)
            self._owners.pop(name, None)
        self._unplaced -= names

    def __repr__(self) -> str:
        return f"{type(self).__name__}(params_with_state={len(self._states)})"

    def __getstate__(self) -> dict[str, Any]:
        """For pickling (and `copy`): the state without the weak references to modules."""
        state = dict(self.__dict__)
        state["_owners"], state["_module"] = {}, None  # the next module stepped takes it
        state.pop("_module_view", None)  # made again on demand (it refers back to self)
        return state

    # -- subclass interface ----------------------------------------------------------------

    @abstractmethod
    def _new_state(self, param: Tensor) -> dict[str, Any]:
        """The state of `param` before its first step."""

    @abstractmethod
    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        """Update `params` in place from `grads`, updating `states` in place."""

    def _update_unless(
        self,
        found_inf: Tensor,
        lr: float,
        params: list[Tensor],
        grads: list[Tensor],
        states: list[dict],
    ) -> None:
        """`_update`, unless `found_inf` is nonzero (then nothing changes).

        This default reads the flag back: one host sync per step. Optimizers with a fused
        kernel that takes `found_inf` override it and decide on the device.
        """
        if not found_inf.item():
            self._update(lr, params, grads, states)

    def _restore(self, key: str, value: Any) -> Any:
        """A state entry from a record: step counters become CPU tensors again."""
        if key == "step":
            return torch.tensor(float(value), dtype=STEP_DTYPE())
        return value.detach().clone() if isinstance(value, Tensor) else value

    # -- helpers -----------------------------------------------------------------------------

    def _states_of(self, names: list[str], params: list[Tensor]) -> list[dict[str, Any]]:
        """The state of each parameter, created or placed on its device where needed."""
        states = list(map(self._states.get, names))
        if self._unplaced or None in states:
            states = list(map(self._state, names, params))
            if self._module is not None:
                for name in names:
                    self._owners.setdefault(name, self._module)
        return cast("list[dict[str, Any]]", states)  # no None: checked above

    def _check_owners(self, module: nn.Module, names: list[str]) -> None:
        """Refuse to step `module` with state another live module created under the same names.

        Raises:
            ValueError: naming both modules and how to step them instead.
        """
        from burnish.module import same_parameters

        for name in names:
            owner = self._owners.get(name)
            other = owner() if owner is not None else None
            if other is None or not self._states.get(name) or same_parameters(other, module):
                continue
            raise ValueError(
                f"This {type(self).__name__} holds state for parameter {name!r} of a "
                f"{type(other).__name__}, and was now given a {type(module).__name__} with a "
                f"parameter of the same name. An optimizer keys its state by the names relative "
                "to the module passed to `step`, so stepping two parts of a model separately "
                "would mix their states. Pass the whole model and the part's gradients: "
                "`optim.step(lr, model, GradientsParams.from_module(grads, model.part))`, or "
                "use one optimizer per part."
            )
        self._module = weakref.ref(module)
        self._owners.update(dict.fromkeys(names, self._module))

    def foreign_state(self, module: nn.Module) -> str | None:
        """Why this optimizer's state cannot be the state of `module`'s parameters, or None.

        An optimizer holds state (momenta, step counts) per parameter name. It cannot step
        `module` when that state was made for another live module, names a parameter
        `module` lacks, or has another shape than the parameter of that name. One pass over
        the state: the learner asks once, before its first iteration.
        """
        from burnish.module import same_parameters

        module = unwrap(module)
        params = dict(module.named_parameters())
        for name, state in self._states.items():
            owner = self._owners.get(name)
            other = owner() if owner is not None else None
            if other is not None and not same_parameters(other, module):
                return (
                    f"it already stepped another {type(other).__name__} (it holds state for "
                    f"that model's parameter {name!r})"
                )
            param = params.get(name)
            if param is None:
                return f"it holds state for a parameter {name!r} that the model does not have"
            for key, value in state.items():
                if isinstance(value, Tensor) and value.dim() and value.shape != param.shape:
                    return (
                        f"its state {key!r} for parameter {name!r} has shape "
                        f"{list(value.shape)}, but the model's parameter has shape "
                        f"{list(param.shape)}"
                    )
        return None

    def _state(self, name: str, param: Tensor) -> dict[str, Any]:
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = self._new_state(param)
        elif name in self._unplaced:
            self._unplaced.discard(name)
            for key, value in state.items():
                if isinstance(value, Tensor) and key != "step":
                    state[key] = value.to(device=param.device, dtype=param.dtype)
        return state


def _snapshot(key: str, value: Any) -> Any:
    if not isinstance(value, Tensor):
        return value
    if key == "step":
        return int(value.item())  # a CPU scalar: no device sync
    return value.detach().clone()


def _check_lr(lr: Any) -> float:
    if type(lr) is not float and len(getattr(lr, "lrs", ())) > 1:
        raise TypeError(
            f"`lr` is a {type(lr).__name__} with a learning rate per parameter group "
            "(ModuleLrScheduler.with_group), but this optimizer applies one rate to every "
            "parameter. Wrap it: `ModuleOptimizer(optim)` (burnish.optim) applies each "
            "group's rate."
        )
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise TypeError(
            f"`lr` must be a float (the learning rate of this step). Received: {lr!r} "
            f"({type(lr).__name__}). Use scheduler.step() to get one from a scheduler."
        )
    lr = float(lr)
    if not math.isfinite(lr):
        raise ValueError(f"`lr` must be finite. Received: lr={lr}.")
    return lr
