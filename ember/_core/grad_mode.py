"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a decorator.  As in PyTorch, the mode belongs to the
thread: a thread running inference under ``no_grad`` does not stop another thread from
recording, and a new thread starts with recording on.  The modes live in `MODES`, a
``threading.local`` whose class attributes are the defaults a new thread sees; the core
reads ``MODES.enabled`` directly, which costs an op one attribute lookup.

`STATE` holds what is process-wide (anomaly mode, the op observer) and, for code outside
the core, the current thread's modes under the same names (``MODES.enabled``).
"""

from __future__ import annotations

import functools
import inspect
import threading


class _ThreadModes(threading.local):
    """The modes of one thread (class attributes: the defaults of a new thread)."""

    enabled = True  # grad mode: ops record the graph
    inference = False  # inside inference_mode()
    # The innermost saved_tensors_hooks (a (pack, unpack) pair), or None; and the message
    # of an enclosing disable_saved_tensors_hooks, or None.
    saved_hooks = None
    saved_hooks_disabled = None


MODES = _ThreadModes()


def _thread_mode(name: str) -> property:
    def get(self):
        return getattr(MODES, name)

    def set(self, value):  # noqa: A001 - the property's setter
        setattr(MODES, name, value)

    return property(get, set, doc=f"The current thread's ``{name}`` (see `MODES`).")


class _GradState:
    __slots__ = ("anomaly", "anomaly_check_nan", "observer")

    enabled = _thread_mode("enabled")
    inference = _thread_mode("inference")
    saved_hooks = _thread_mode("saved_hooks")

    def __init__(self):
        self.anomaly = False
        self.anomaly_check_nan = True
        # An object that sees every op call, backward node and module call (the profiler,
        # selective checkpointing); None, the usual case, costs each op one branch.
        self.observer = None


STATE = _GradState()


def is_grad_enabled() -> bool:
    """True when ops record the autograd graph."""
    return MODES.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``."""
    return MODES.inference


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
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamContext):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: ops inside record no graph."""

    def __enter__(self):
        self._prev = MODES.enabled
        MODES.enabled = False

    def __exit__(self, *exc):
        MODES.enabled = self._prev
        return False


class enable_grad(_NoParamContext):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: re-enable recording inside ``no_grad``."""

    def __enter__(self):
        self._prev = MODES.enabled
        MODES.enabled = True

    def __exit__(self, *exc):
        MODES.enabled = self._prev
        return False


class set_grad_enabled(_GradModeContext):  # noqa: N801 - PyTorch's name
    """Turn recording on or off; acts at once as a function, and as a context manager."""

    def __init__(self, mode: bool):
        self._prev = MODES.enabled
        self.mode = bool(mode)
        MODES.enabled = self.mode

    def __call__(self, func):
        # As a decorator it must leave the mode as it was at decoration time.
        MODES.enabled = self._prev
        return super().__call__(func)

    def __enter__(self):
        MODES.enabled = self.mode

    def __exit__(self, *exc):
        MODES.enabled = self._prev
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
        self._prev = (MODES.enabled, MODES.inference)
        if self.mode:
            MODES.enabled, MODES.inference = False, True
        else:
            MODES.enabled, MODES.inference = True, False

    def __exit__(self, *exc):
        MODES.enabled, MODES.inference = self._prev
        return False

    def clone(self):
        return inference_mode(self.mode)
