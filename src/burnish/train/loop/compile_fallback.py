"""When torch's compiler fails on `compile(step=True)`'s step: train on eagerly, said once.

A compiler bug (an `InductorError` from deep inside the scheduler, a backend that cannot
lower an operation, a C++ toolchain that fails) can surface after minutes of compiling, and
says nothing about the user's model: the same step runs eagerly. `CompiledTrainStep` catches
what `compile_failure` recognises, warns once with `fallback_message`, and runs every later
iteration eagerly. A graph break under `fullgraph=True` (`Unsupported`) and an error of the
step's own code are not compiler failures: they are raised as they are.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

__all__ = ["CompileFallbackWarning", "compile_failure", "fallback_message", "warn_once"]

log = logging.getLogger("burnish.train")


class CompileFallbackWarning(RuntimeWarning):
    """torch's compiler failed on the whole train step; training goes on eagerly."""


def _failure_types() -> tuple[type[BaseException], ...]:
    from torch._dynamo import exc as dynamo

    types: list[type[BaseException]] = [
        dynamo.BackendCompilerFailed,  # a backend raised (InductorError is one since torch 2.6)
        dynamo.InternalTorchDynamoError,  # dynamo's own bug
    ]
    try:  # the toolchain's and lowering's errors, should one escape unwrapped
        from torch._inductor import exc as inductor

        types += [inductor.CppCompileError, inductor.LoweringException]
    except ImportError:  # pragma: no cover - every torch burnish supports has them
        pass
    return tuple(types)


def compile_failure(error: BaseException) -> bool:
    """Whether `error` is torch's compiler failing, not the compiled code's own error."""
    return isinstance(error, _failure_types())


def fallback_message(error: BaseException, seconds: float, options: dict) -> str:
    """The one warning: which error, after how long, what happens now, how to switch off."""
    inner = getattr(error, "inner_exception", None)  # what the backend raised
    what = f"{type(error).__name__}: {_first_line(error)}"
    if isinstance(inner, BaseException):
        what = f"{type(error).__name__} from {type(inner).__name__}: {_first_line(inner)}"
    settings = ", ".join(f"{key}={value!r}" for key, value in options.items())
    return (
        f"`compile(step=True{', ' + settings if settings else ''})`: torch's compiler failed "
        f"on the train step after {seconds:.1f} s ({what}). Training "
        "goes on with the eager step (the same updates, without the compiled graph) for the "
        "rest of this fit. To start eagerly without trying to compile, leave out "
        "`.compile(step=True, ...)`; `.compile()` compiles the forward only, and another "
        "`mode=` or `backend=` may compile where this one failed."
    )


def _first_line(error: BaseException) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    first = lines[0].strip() if lines else "no message"
    return first if len(first) <= 300 else first[:297] + "..."


def warn_once(text: str, warn: Callable[[str], None] | None) -> None:
    """Say `text` through `warn` (the run's announcer: console and experiment.log) or, without
    one, as a WARNING record of `burnish.train` and a Python warning."""
    if warn is not None:
        warn(text)
        return
    log.warning("%s", text)
    warnings.warn(text, CompileFallbackWarning, stacklevel=3)
