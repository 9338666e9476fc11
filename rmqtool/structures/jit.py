"""Kernels written in numba's subset of Python, compiled only when a process has enough work for them.

numba costs a process about 0.5 s of CPU to import and as much again to build its context on the first
call, and a kernel not yet in its cache compiles for about a second: more than a small store's whole walk
takes as plain Python. So a kernel (`kernel`) runs as the Python function it is written as until the
process has spent about `INTERPRETED_WORK` microseconds in them as Python (each kernel's `work` rule
estimates a call's) or a caller foresees more work than that (`foresee`: a scan of a big log); after that,
and for any kernel without a `work` rule, it runs compiled
(`njit(cache=True)`, kept in numba's cache). A helper its kernels call (`jitable`) stays a plain function,
compiled in its place into each kernel that names it. A command on a small store never imports numba.

The first compile that misses the cache says so once on stderr (`COMPILING_NOTE`): a fresh install or an
empty `NUMBA_CACHE_DIR` compiles each kernel a command uses once, for some seconds.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # start-up: numba loads on the first compiled call
    from numba.core.dispatcher import Dispatcher

INTERPRETED_WORK = 1_000_000  # microseconds of Python a process spends in kernels before they compile: ~1 compile

_helpers: dict[Callable, tuple[bool, Callable[[], Callable] | None]] = {}  # each jitable: (inline, compiled)
_helper_twins: dict[Callable, Dispatcher] = {}
_lock = threading.RLock()
_interpreted = [0]  # work units run as Python so far in this process
_foreseen = [False]  # a caller said work past INTERPRETED_WORK is coming: every kernel compiles now


def jitable(fn: Callable | None = None, *, inline: bool = False, compiled: Callable[[], Callable] | None = None):
    """Mark `fn` as a helper compiled kernels call (inlined into them with `inline`); it stays `fn`.
    `compiled()`, when given, returns what kernels compile in its place (called as numba loads)."""
    def mark(f: Callable) -> Callable:
        _helpers[f] = (inline, compiled)
        return f

    return mark(fn) if fn is not None else mark


class Kernel:
    """A function written in numba's subset: called as Python while the process's interpreted work is
    small (when it has a `work` rule), else compiled once (numba, cached on disk) and called compiled."""

    def __init__(self, fn: Callable, work: Callable[..., int] | None, options: dict) -> None:
        self.py_func = fn
        self._work = work
        self._options = options
        self._compiled: Dispatcher | None = None
        self.__doc__, self.__name__, self.__wrapped__ = fn.__doc__, fn.__name__, fn

    def __call__(self, *args):
        if self._compiled is None and self._work is not None and not _foreseen[0]:
            units = self._work(*args)
            if _interpreted[0] + units <= INTERPRETED_WORK:
                _interpreted[0] += units
                import numpy as np  # the kernels' modules have loaded it

                with np.errstate(over="ignore"):  # compiled integers wrap silently: so do numpy's here
                    return _as_returned(self.py_func(*args), np.generic)
        return self.compiled()(*args)

    def compiled(self) -> Dispatcher:
        """The compiled kernel (numba imported on the first call)."""
        if self._compiled is None:
            with _lock:
                if self._compiled is None:
                    self._compiled = _compile(self.py_func, self._options)
        return self._compiled


def _as_returned(value, scalar: type):
    """`value` as a compiled kernel returns it: numpy scalars (alone or in a tuple) as Python's."""
    if isinstance(value, scalar):
        return value.item()
    if isinstance(value, tuple):
        return tuple(v.item() if isinstance(v, scalar) else v for v in value)
    return value


def kernel(*, work: Callable[..., int] | None = None, nogil: bool = False) -> Callable[[Callable], Kernel]:
    """Decorate a kernel; `work(*args)` estimates a call's microseconds as Python (without one: always compiled)."""
    options = {"nogil": True} if nogil else {}
    return lambda fn: Kernel(fn, work, options)


def _compile(fn: Callable, options: dict) -> Dispatcher:
    """`fn` compiled (cached on disk) with every helper and kernel it names compiled in its place."""
    from numba import njit

    _note_compiles()
    return njit(cache=True, **options)(_naming_compiled(fn))


def _naming_compiled(fn: Callable) -> Callable:
    """A copy of `fn` whose globals name the compiled helpers and kernels in place of the Python ones."""
    names = set(_global_names(fn.__code__))
    own = fn.__globals__
    swapped = {name: _compiled_twin(own[name]) for name in names if name in own and _is_ours(own[name])}
    if not swapped:
        return fn
    copy = types.FunctionType(fn.__code__, {**own, **swapped}, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    return copy


def _global_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _is_ours(value: object) -> bool:
    return isinstance(value, Kernel) or (callable(value) and value in _helpers)


def _compiled_twin(value: object) -> Dispatcher:
    if isinstance(value, Kernel):
        return value.compiled()
    twin = _helper_twins.get(value)
    if twin is None:
        from numba import njit

        inline, compiled = _helpers[value]
        source = compiled() if compiled is not None else value  # now: it may load a library cached kernels link
        twin = njit(cache=True, inline="always" if inline else "never")(_naming_compiled(source))
        _helper_twins[value] = twin
    return twin


_noted = [False]


def _note_compiles() -> None:
    """Once a process, on a terminal: say on stderr when numba compiles (its cache missed)."""
    if _noted[0]:
        return
    _noted[0] = True
    if not sys.stderr.isatty():  # a person waits at a terminal; a script's or a log's stderr stays the command's own
        return
    from numba.core import event

    class CompilingNote(event.Listener):
        said = False

        def on_start(self, ev) -> None:
            if not CompilingNote.said:
                CompilingNote.said = True
                sys.stderr.write(COMPILING_NOTE)
                sys.stderr.flush()

        def on_end(self, ev) -> None:
            pass

    event.register("numba:compile", CompilingNote())


COMPILING_NOTE = ("rmqtool: compiling its kernels for this machine, once after an install (some seconds; "
                  "kept in numba's cache, see NUMBA_CACHE_DIR in README)\n")


def foresee(units: int) -> None:
    """A caller is about to hand the kernels `units` of work (the `work` rules' microseconds): when that would take
    the process past INTERPRETED_WORK, every kernel compiles from now on. A walk of a big log then compiles at its
    start instead of running its first batches as Python, which costs a command some seconds (the per-call rules
    see only one batch at a time, and the batches run as Python side by side)."""
    if _interpreted[0] + units > INTERPRETED_WORK:
        _foreseen[0] = True


def interpreted_work() -> int:
    """Work units this process ran as Python so far."""
    return _interpreted[0]
