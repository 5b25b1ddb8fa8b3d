"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a decorator.  As in PyTorch, the mode belongs to the
thread: a thread running inference under ``no_grad`` does not stop another thread from
recording, and a new thread starts with recording on.

`STATE` is a ``threading.local``: ``STATE.enabled``, ``STATE.inference`` and the
saved-tensor hooks are the current thread's (class attributes give a new thread its
defaults), which costs an op one attribute lookup.  What is process-wide (anomaly mode,
the op observer) lives in `PROCESS`.
"""

from __future__ import annotations

import functools
import inspect
import threading


class _Process:
    """The process-wide modes."""

    __slots__ = ("anomaly", "anomaly_check_nan", "observer")

    def __init__(self):
        self.anomaly = False
        self.anomaly_check_nan = True
        # An object that sees every op call, backward node and module call (the profiler,
        # selective checkpointing); None, the usual case, costs each op one branch.
        self.observer = None


PROCESS = _Process()


class _GradState(threading.local):
    """The modes of the current thread (class attributes: a new thread's defaults)."""

    enabled = True  # grad mode: ops record the graph
    inference = False  # inside inference_mode()
    # The innermost saved_tensors_hooks (a (pack, unpack) pair), or None; and the message
    # of an enclosing disable_saved_tensors_hooks, or None.
    saved_hooks = None
    saved_hooks_disabled = None
    # retain_graph of the backward pass running on this thread: a node that runs a graph
    # of its own (ember.compile's) frees its parts as it goes unless it is set
    retain_graph = False


STATE = _GradState()


def is_grad_enabled() -> bool:
    """True when ops record the autograd graph."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``."""
    return STATE.inference


class _GradModeContext:
    """Base: a context manager that is also usable as a decorator."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def generator_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as exc:  # thrown in by the caller: pass it on
                            with self.clone():
                                response = gen.throw(exc)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value
            return generator_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class _NoParamContext(_GradModeContext):
    """Sets recording to `_enabled` inside the block, then restores it.  Also usable as a
    bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    _enabled: bool

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._enabled

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False


class no_grad(_NoParamContext):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: ops inside record no graph."""

    _enabled = False


class enable_grad(_NoParamContext):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: re-enable recording inside ``no_grad``."""

    _enabled = True


class set_grad_enabled(_GradModeContext):  # noqa: N801 - PyTorch's name
    """Turn recording on or off; acts at once as a function, and as a context manager."""

    def __init__(self, mode: bool):
        self._prev = STATE.enabled
        self.mode = bool(mode)
        STATE.enabled = self.mode

    def __call__(self, func):
        # As a decorator it must leave the mode as it was at decoration time.
        STATE.enabled = self._prev
        return super().__call__(func)

    def __enter__(self):
        STATE.enabled = self.mode

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_GradModeContext):  # noqa: N801 - PyTorch's name
    """Like ``no_grad``, and flags the mode for ``is_inference_mode_enabled``.

    ``inference_mode(False)`` turns recording back on inside it; ``@inference_mode``
    works as a bare decorator too.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self._prev = (STATE.enabled, STATE.inference)
        if self.mode:
            STATE.enabled, STATE.inference = False, True
        else:
            STATE.enabled, STATE.inference = True, False

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._prev
        return False

    def clone(self):
        return inference_mode(self.mode)
