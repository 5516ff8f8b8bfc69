"""The opt-in `torch.compile` paths of the learner (`LearnerBuilder.compile`).

Two granularities:

* `compiled_forward` (the default): each module's `forward` is compiled; `bn.backward` and
  the optimizer step run eagerly.
* `CompiledTrainStep` (`compile(step=True)`): one function holding `train_step` (forward and
  `bn.backward`) and the optimizer step is compiled as a single graph; with
  `mode="reduce-overhead"` on CUDA the graph is replayed as a CUDA graph (torch copies each
  batch into its static input buffers). The learning rate enters as a device tensor, so a new
  value never recompiles. If torch's compiler fails on the step, the fit trains on eagerly
  after one warning (compile_fallback.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import types
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from burnish.optim import Adam, GradientsParams, Optimizer, Sgd
from burnish.optim.param_table import trace_table
from burnish.train.loop.compile_fallback import compile_failure, fallback_message, warn_once

if TYPE_CHECKING:
    from burnish.train.loop.precision import MixedPrecision

__all__ = ["CompiledTrainStep", "check_compiled_step", "compiled_forward", "tracing_autograd"]

# The optimizers whose torch kernels take the learning rate as a tensor inside a graph.
STEP_OPTIMIZERS = (Sgd, Adam)  # AdamW is an Adam


@contextlib.contextmanager
def compiled_forward(modules: list[nn.Module], options: Mapping[str, Any] | None) -> Iterator[None]:
    """Compile each module's `forward` for the duration of the block, then restore it.

    `train_step` and `valid_step` call `self.forward(...)` directly, so the compiled function is
    set as an instance attribute shadowing the method (`nn.Module.compile` would only compile
    `__call__`). Parameters, state dicts and records are unaffected.

    Args:
        modules: the training model and its inference twin (each compiled separately).
        options: keyword arguments of `torch.compile`, or None to leave the modules alone.
    """
    if options is None:
        yield
        return
    for module in modules:
        module.__dict__.pop("forward", None)
        module.forward = torch.compile(module.forward, **options)
    try:
        yield
    finally:
        for module in modules:
            module.__dict__.pop("forward", None)


def check_compiled_step(
    optim: Any,
    *,
    grads_accumulation: int | None,
    mixed_precision: torch.dtype | None,
    strategy: str,
    world_size: int,
) -> None:
    """Refuse the combinations a compiled whole step cannot run (`compile(step=True)`).

    Raises:
        ValueError: naming the setting that conflicts and what to do instead.
    """
    fix = "Use `compile()` (the forward only) with it, or drop it."
    if not isinstance(optim, STEP_OPTIMIZERS):
        raise ValueError(
            "`compile(step=True)` compiles the optimizer step with the learning rate as a "
            "tensor, which torch's Sgd, Adam and AdamW kernels take inside a graph. Received: "
            f"{type(optim).__name__}. Use one of those, or `compile()` (the forward only)."
        )
    if grads_accumulation is not None and grads_accumulation > 1:
        raise ValueError(
            "`compile(step=True)` steps the optimizer in every iteration, so it cannot "
            f"accumulate gradients. Received: grads_accumulation({grads_accumulation}). " + fix
        )
    if mixed_precision is torch.float16:
        raise ValueError(
            "`compile(step=True)` runs in float32 or bfloat16: float16's loss scaler decides "
            "on the host whether to lower its scale. Received: mixed_precision('fp16'). Use "
            "mixed_precision('bf16'), or `compile()` (the forward only)."
        )
    if world_size > 1 or strategy == "fsdp":
        raise ValueError(
            "`compile(step=True)` trains in one process: the gradient all-reduce of several "
            "ranks runs from autograd hooks, which a compiled step does not call. Received: "
            f"strategy={strategy!r}, world size {world_size}. " + fix
        )


class CompiledTrainStep:
    """`train_step`, then the optimizer step, as one compiled function (one graph).

    Before the first call, the parameter table and the optimizer state are made eagerly (a
    resumed state is placed on the device), so the graph only reads and updates tensors. The
    learning rate is copied into a 0-dim tensor on the model's device each iteration. Under
    `mode="reduce-overhead"` the returned item is cloned out of the CUDA graph's memory, which
    the next replay overwrites while the metrics may still hold it.

    Args:
        model: the training model (`train_step`); updated in place.
        optim: an `Sgd`, `Adam` or `AdamW` (see `check_compiled_step`).
        options: keyword arguments of `torch.compile`; `fullgraph=True` and `dynamic=False`
            unless given: a batch of another shape (the last, partial one) compiles a second
            graph once, and any break in the graph is an error instead of a slow step.
        precision: the run's bfloat16 autocast, or None.
        warn: says the one warning if torch's compiler fails on the step (the run's
            announcer); None: a `burnish.train` log record and a Python warning.
    """

    def __init__(
        self,
        model: nn.Module,
        optim: Optimizer,
        options: Mapping[str, Any],
        precision: MixedPrecision | None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.model = model
        self.optim = optim
        self.precision = precision
        self.options = dict(options)
        self.warn = warn
        self.eager = False  # set when torch's compiler failed: every later step is eager
        self.clone_outputs = options.get("mode") in ("reduce-overhead", "max-autotune")
        self._lr: Tensor | None = None
        # dynamo caches graphs per code object: a copy of `_step`'s code for each run keeps
        # the graphs of earlier runs (and their models) out of this one's cache and limit.
        step = types.FunctionType(CompiledTrainStep._step.__code__.replace(), globals(), "_step")
        self._function = torch.compile(step, **{"fullgraph": True, "dynamic": False, **options})

    def __call__(self, batch: Any, lr: float) -> Any:
        """Train on `batch` with learning rate `lr`; returns the item for the metrics."""
        if self.eager:
            return self._eager_step(batch, lr)
        if self._lr is None:
            self._lr = self._prepare()
        self._lr.fill_(lr)
        started = time.perf_counter()
        try:
            if self.clone_outputs:
                torch.compiler.cudagraph_mark_step_begin()
                return _map_tensors(self._function(self, batch, self._lr), Tensor.clone)
            return self._function(self, batch, self._lr)
        except Exception as error:
            if not compile_failure(error):
                raise
            # Compiling failed before the graph ran: nothing of this step was applied.
            seconds = time.perf_counter() - started
            warn_once(fallback_message(error, seconds, self.options), self.warn)
            self._to_eager()
            return self._eager_step(batch, lr)

    def _to_eager(self) -> None:
        """From now on, eager steps: the step counters back on the CPU, where the eager
        kernels keep them (a compiled Adam counts on the device)."""
        self.eager = True
        for state in self.optim._states.values():
            step = state.get("step")
            if isinstance(step, Tensor) and step.device.type != "cpu":
                state["step"] = step.cpu()

    def _eager_step(self, batch: Any, lr: float) -> Any:
        """What the compiled function does, eagerly (the optimizer takes a float rate)."""
        output, grads = self._train_step(batch)
        self.optim.step(lr, self.model, grads)
        return output.item

    def _train_step(self, batch: Any) -> tuple[Any, GradientsParams]:
        """`train_step` (under autocast with mixed precision) and its gradients, by parameter:
        the part the compiled and the eager step share (dynamo inlines it)."""
        model, precision = self.model, self.precision
        with precision.train() if precision is not None else contextlib.nullcontext():
            output = model.train_step(batch)  # type: ignore[operator]  # checked at fit
        grads = output.grads
        if not isinstance(grads, GradientsParams):
            grads = GradientsParams.from_grads(grads, model)
        return output, grads

    def _prepare(self) -> Tensor:
        """The table and optimizer state, made eagerly; the lr tensor on the model's device."""
        table = trace_table(self.model)
        assert table is not None
        params = [p for p in table.params if p.requires_grad]
        names = [table.name_of[id(p)] for p in params]
        states = self.optim._states_of(names, params)
        capturable = isinstance(self.optim, Adam)
        for state, param in zip(states, params):
            if capturable and "step" in state:  # the kernel counts on the device in a graph
                state["step"] = state["step"].to(param.device)
            for value in state.values():
                if isinstance(value, Tensor):
                    torch._dynamo.mark_static_address(value)
        device = params[0].device if params else torch.device("cpu")
        lr = torch.zeros((), device=device)
        # Its address never changes (filled in place each step): a CUDA graph reads it where it
        # is, instead of copying it into a static input buffer at every replay.
        torch._dynamo.mark_static_address(lr)
        return lr

    def close(self) -> None:
        """Unpin the model's parameter table (the end of `fit`)."""
        trace_table(None)

    def _step(self, batch: Any, lr: Tensor) -> Any:
        output, grads = self._train_step(batch)
        self.optim._step(lr, self.model, grads, None)  # type: ignore[arg-type]  # a tensor lr
        return _map_tensors(output.item, Tensor.detach)


@contextlib.contextmanager
def tracing_autograd(enabled: bool) -> Iterator[None]:
    """Let dynamo trace `torch.autograd.grad` (what `bn.backward` runs) while `enabled`."""
    if not enabled:
        yield
        return
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        yield


def _map_tensors(value: Any, function: Any) -> Any:
    """`value` with `function` applied to every tensor in it (dataclasses, sequences, dicts)."""
    if isinstance(value, Tensor):
        return function(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        changes = {f.name: _map_tensors(getattr(value, f.name), function) for f in fields if f.init}
        return dataclasses.replace(value, **changes)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_map_tensors(v, function) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, function) for k, v in value.items()}
    return value
