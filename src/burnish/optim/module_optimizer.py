"""Different optimizers for groups of a model's parameters (Burn main: `ModuleOptimizer`).

optim = ModuleOptimizer(AdamWConfig(weight_decay=0.1).init()).with_group(
    ParamGroup.from_regex(r"(bias|norm\\.weight)$"), AdamWConfig(weight_decay=0.0).init())
model = optim.step(lr, model, grads)    # lr: a float or a ModuleLearningRate

Each parameter goes to the optimizer of the last group added that matches its path (Burn's
rule: a later group takes precedence; the first optimizer is the fallback for every
parameter). With a `ModuleLearningRate` (from `ModuleLrScheduler`) each parameter also takes
its lr group's rate. Which optimizer and which rate each parameter gets is worked out once per
set of parameter names (and lr groups), then every step runs one kernel call per (optimizer
group, lr group) pair: no Python work per parameter tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress
from typing import Any, TypeVar

from torch import Tensor, nn

from burnish.errors import RecordError
from burnish.optim.base import _RECORD_VERSION, Optimizer, _check_lr
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.module_learning_rate import ModuleLearningRate
from burnish.optim.param_group import ParamGroup
from burnish.optim.param_table import param_table, unwrap
from burnish.optim.params import GradientsParams

__all__ = ["ModuleOptimizer"]

M = TypeVar("M", bound=nn.Module)
_KIND = "ModuleOptimizer"


@dataclass(frozen=True)
class _Part:
    """The parameters of one optimizer group stepped at one lr group's rate."""

    lr_index: int
    mask: list[bool] | None  # over the optimizer group's parameters; None: all of them


@dataclass(frozen=True)
class _Group:
    """One optimizer group's share of a step's parameters, split by learning rate."""

    index: int
    mask: list[bool] | None  # over the step's parameters; None: all of them
    names: list[str]
    parts: list[_Part]


@dataclass(frozen=True)
class _Plan:
    """Who steps what, for one list of parameter names and one set of lr groups."""

    names: list[str]
    lr_groups: tuple[ParamGroup, ...] | None
    groups: list[_Group]


class ModuleOptimizer(Optimizer, groups=True):
    """An optimizer for every parameter, and others for groups of them (`with_group`).

    Args:
        optim: the optimizer of every parameter no group claims (an optimizer, or a config
            whose `init()` builds one).

    Example:
        >>> import torch
        >>> import burnish as bn
        >>> from burnish.optim import AdamWConfig, GradientsParams, ModuleOptimizer, ParamGroup
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
        >>> optim = ModuleOptimizer(AdamWConfig(weight_decay=0.1)).with_group(
        ...     ParamGroup.from_predicate("bias").fuse(ParamGroup.from_predicate("1.")),
        ...     AdamWConfig(weight_decay=0.0))
        >>> grads = GradientsParams.from_grads(bn.backward(model(torch.ones(2, 3)).sum()), model)
        >>> model = optim.step(1e-3, model, grads)
        >>> optim.routes(model)
        {'0.weight': 0, '0.bias': 1, '1.weight': 1, '1.bias': 1}
    """

    def __init__(self, optim: Optimizer | Any) -> None:
        super().__init__(None)
        self._optims: list[Optimizer] = [_optimizer(optim)]
        self._groups: list[ParamGroup] = [ParamGroup.all()]
        self._clipping: list[GradientClippingConfig | None] = [self._optims[0].grad_clipping]
        self._plan: _Plan | None = None

    def with_group(
        self,
        group: ParamGroup,
        optim: Optimizer | Any,
        grad_clipping: GradientClippingConfig | None = None,
    ) -> ModuleOptimizer:
        """Step the parameters in `group` with `optim`: a new ModuleOptimizer (this one stays
        as it was; the new one holds a copy of its state).

        A parameter in several groups goes to the last one added (Burn's precedence). The
        state the earlier optimizers hold for the group's parameters is dropped, as Burn's.

        Args:
            group: the parameters (`ParamGroup.from_path` / `from_predicate` / `from_regex`).
            optim: their optimizer (or a config whose `init()` builds one).
            grad_clipping: the group's clipping, in place of `optim`'s own.

        Raises:
            TypeError: for a group that is not a ParamGroup, or an optimizer already used here.
        """
        if not isinstance(group, ParamGroup):
            raise TypeError(
                "`group` must be a ParamGroup (ParamGroup.from_path / from_predicate / "
                f"from_regex). Received: {type(group).__name__}."
            )
        optim = _optimizer(optim)
        if any(optim is other for other in self._optims):
            raise TypeError(
                f"This {type(optim).__name__} already steps another group of this "
                "ModuleOptimizer; the two groups would share its state. Pass a new optimizer "
                "for each group (`config.init()` again)."
            )
        for earlier in self._optims:
            stepped = earlier._module() if earlier._module is not None else None
            if stepped is not None:
                group._bind(stepped)  # `from_ids`' tensors: their paths in the model stepped
        new = self._replace()
        for earlier in new._optims:
            earlier._drop_state(set(group.select(list(earlier._states))))
        new._optims.append(optim)
        new._groups.append(group)
        new._clipping.append(grad_clipping if grad_clipping is not None else optim.grad_clipping)
        new._plan = None
        return new

    @property
    def grad_clipping(self) -> GradientClippingConfig | None:
        """The clipping of the base group, the first (Burn main: `grad_clipping()`)."""
        return self._clipping[0]

    @grad_clipping.setter
    def grad_clipping(self, value: GradientClippingConfig | None) -> None:
        # The base class sets it before `_clipping` exists; `with_grad_clipping` after.
        self.__dict__.setdefault("_clipping", [None])[0] = value

    def has_gradient_clipping(self) -> bool:
        """Whether any group clips its gradients (Burn main: `has_gradient_clipping()`)."""
        return any(clipping is not None for clipping in self._clipping)

    @property
    def optimizers(self) -> list[tuple[ParamGroup, Optimizer]]:
        """Each group with its optimizer, the base `ParamGroup.all()` first."""
        return list(zip(self._groups, self._optims))

    def routes(self, model: nn.Module) -> dict[str, int]:
        """The index of the optimizer group of each of `model`'s parameters."""
        names = param_table(model).names
        for group in self._groups:
            group._bind(model)
        return dict(zip(names, map(self._group_index, names)))

    # -- the step ----------------------------------------------------------------------------

    def _step(self, lr: float, model: M, grads: GradientsParams, found_inf: Tensor | None) -> M:
        lr_groups = getattr(lr, "groups", None)
        lrs: tuple[float, ...] = getattr(lr, "lrs", None) or (_check_lr(lr),)
        if not isinstance(grads, GradientsParams):
            raise TypeError(
                "`grads` must be a GradientsParams (GradientsParams.from_grads(grads, model)). "
                f"Received: {type(grads).__name__}."
            )
        names, params, grad_list = grads._take_for(model)
        if not params:
            return model
        plan = self._plan_for(model, names, lr_groups)
        for group in plan.groups:
            self._step_group(group, lrs, model, params, grad_list, found_inf)
        return model

    def _step_group(
        self,
        group: _Group,
        lrs: tuple[float, ...],
        model: M,
        params: list[Tensor],
        grad_list: list[Tensor],
        found_inf: Tensor | None,
    ) -> None:
        """One optimizer group: its gradients clipped together, then one update per rate."""
        if group.mask is not None:
            params = list(compress(params, group.mask))
            grad_list = list(compress(grad_list, group.mask))
        clipping = self._clipping[group.index]
        if clipping is not None:
            grad_list = clipping.clip(grad_list)
        optim = self._optims[group.index]
        for part in group.parts:
            names, part_params, part_grads = group.names, params, grad_list
            if part.mask is not None:
                names = list(compress(names, part.mask))
                part_params = list(compress(params, part.mask))
                part_grads = list(compress(grad_list, part.mask))
            lr = _check_lr(lrs[part.lr_index])
            optim._apply(lr, model, names, part_params, part_grads, found_inf, clip=False)

    def _plan_for(
        self, model: nn.Module, names: list[str], lr_groups: tuple[ParamGroup, ...] | None
    ) -> _Plan:
        plan = self._plan
        if plan is not None and plan.lr_groups is lr_groups and plan.names == names:
            return plan
        all_names = param_table(model).names
        for group in (*self._groups, *(lr_groups or ())):
            group._bind(model)  # the paths of `ParamGroup.from_ids`' tensors in `model`
        self._check_groups_match(model, all_names, self._groups, "ModuleOptimizer.with_group")
        if lr_groups is not None:
            self._check_groups_match(model, all_names, lr_groups, "ModuleLrScheduler.with_group")
        self._plan = plan = _Plan(list(names), lr_groups, _groups(self, names, lr_groups))
        return plan

    def _group_index(self, path: str) -> int:
        groups = self._groups
        return next((i for i in range(len(groups) - 1, 0, -1) if groups[i].matches(path)), 0)

    @staticmethod
    def _check_groups_match(
        model: nn.Module, names: tuple[str, ...], groups: Any, where: str
    ) -> None:
        """Refuse a group (other than the base) that matches none of `model`'s parameters.

        Raises:
            ValueError: naming the group, the model and some of its parameter paths.
        """
        for group in groups[1:]:
            if not any(map(group.matches, names)):
                shown = ", ".join(map(repr, names[:12])) + (", ..." if len(names) > 12 else "")
                raise ValueError(
                    f"{group} (given to {where}) matches none of the {len(names)} parameters "
                    f"of {type(unwrap(model)).__name__}: {shown}. Paths are relative to the "
                    "model given to `step` (the names of `model.named_parameters()`). Fix the "
                    "path or pattern, or drop the group."
                )

    # -- records -----------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """Every group's state, keyed by parameter path, with the group that holds it.

        `{"optimizer": "ModuleOptimizer", "version", "groups": [{"group", "optimizer",
        "version"}], "state": {path: {...}}, "group_of": {path: index}}`.
        """
        records = [optim.to_record() for optim in self._optims]
        state: dict[str, Any] = {}
        group_of: dict[str, int] = {}
        for index, record in enumerate(records):
            state.update(record["state"])
            group_of.update(dict.fromkeys(record["state"], index))
        groups = [
            {"group": repr(group), "optimizer": record["optimizer"], "version": record["version"]}
            for group, record in zip(self._groups, records)
        ]
        return {
            "optimizer": _KIND,
            "version": _RECORD_VERSION,
            "groups": groups,
            "state": state,
            "group_of": group_of,
        }

    def load_record(self, record: dict[str, Any]) -> ModuleOptimizer:
        """Give each group's optimizer the state of the parameters its group matches now
        (Burn routes a loaded state by path the same way). A plain optimizer's record loads
        too, when its optimizer steps those parameters here.

        Raises:
            RecordError: if the record is not an optimizer's, or a parameter's state was
                saved by another kind of optimizer than its group's here.
        """
        if not isinstance(record, dict) or not isinstance(record.get("state"), dict):
            raise RecordError(
                "Expected an optimizer record from ModuleOptimizer.to_record(). Received: "
                f"{type(record).__name__}."
            )
        saved_kinds = _saved_kinds(record)
        shares: list[dict[str, Any]] = [{} for _ in self._optims]
        for name, entry in record["state"].items():
            index = self._group_index(name)
            kind = type(self._optims[index]).__name__
            if saved_kinds(name) != kind:
                raise RecordError(
                    f"The state of parameter {name!r} was saved by {saved_kinds(name)}, but "
                    f"here {self._groups[index]} routes it to a {kind} (group {index}). "
                    "Build the ModuleOptimizer with the same groups and optimizers as the run "
                    "that saved the record."
                )
            shares[index][name] = entry
        for optim, share in zip(self._optims, shares):
            optim.load_record({"optimizer": type(optim).__name__, "state": share})
        self._plan = None
        return self

    def foreign_state(self, module: nn.Module) -> str | None:
        """Why a group's state cannot be the state of `module`'s parameters, or None."""
        return next(filter(None, (optim.foreign_state(module) for optim in self._optims)), None)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_plan"] = None
        return state

    def __repr__(self) -> str:
        pairs = ", ".join(f"{group}: {optim!r}" for group, optim in self.optimizers)
        return f"ModuleOptimizer({pairs})"

    # -- the base class's interface: every update goes to the groups' optimizers -------------

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        raise AssertionError("ModuleOptimizer keeps no state of its own")

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        raise AssertionError("ModuleOptimizer updates through its groups' optimizers")


def _groups(
    optim: ModuleOptimizer, names: list[str], lr_groups: tuple[ParamGroup, ...] | None
) -> list[_Group]:
    """Each optimizer group's parameters among `names`, split by lr group (once per plan)."""
    optim_index = list(map(optim._group_index, names))
    if lr_groups is None:
        lr_index = [0] * len(names)
    else:
        router = ModuleLearningRate([0.0] * len(lr_groups), lr_groups)
        lr_index = list(map(router.group_index, names))
    result = []
    for index in sorted(set(optim_index)):
        mask = [i == index for i in optim_index]
        member_lrs = list(compress(lr_index, mask))
        parts = [
            _Part(lr, None if len(set(member_lrs)) == 1 else [i == lr for i in member_lrs])
            for lr in sorted(set(member_lrs))
        ]
        result.append(
            _Group(index, None if all(mask) else mask, list(compress(names, mask)), parts)
        )
    return result


def _saved_kinds(record: dict[str, Any]) -> Any:
    """name -> the kind of optimizer that saved the name's state in `record`."""
    kind = record.get("optimizer")
    if kind != _KIND:
        return lambda name: kind
    groups, group_of = record.get("groups", []), record.get("group_of", {})
    return lambda name: groups[group_of[name]]["optimizer"]


def _optimizer(value: Optimizer | Any) -> Optimizer:
    """An optimizer from an optimizer or its config."""
    if isinstance(value, ModuleOptimizer):
        raise TypeError(
            "A ModuleOptimizer cannot be one group's optimizer. Add its groups to the outer "
            "ModuleOptimizer with `with_group` instead."
        )
    if isinstance(value, Optimizer):
        return value
    init = getattr(value, "init", None)
    built = init() if callable(init) else None
    if isinstance(built, Optimizer):
        return built
    raise TypeError(
        "Expected a burnish optimizer (e.g. AdamWConfig().init()) or its config. Received: "
        f"{value!r} ({type(value).__name__})."
    )
