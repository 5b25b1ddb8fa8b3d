"""The profiler: ``profile``, ``record_function``, ``schedule`` and trace handlers.

While a profile records, a `_Recorder` is installed as ember's observer (see
``ember/ops/_observer.py``): every op call (``Function.apply``), every backward
node the engine runs and every ``nn.Module`` call becomes a timed event, nested in
the events that were open on its thread.  When nothing is profiled the op path pays
one branch.

Op events are named after their ember op ("mul", "matmul", "add_"); a class may set
``_profile_name``.  Backward events carry the node's name ("MulBackward0"), modules
"nn.Module: Linear", and ``record_function`` scopes the given label.  With a
``schedule``, ``prof.step()`` moves through wait / warmup / active steps and each
recorded step is wrapped in a "ProfilerStep#N" event.

On a GPU, ops are launched asynchronously (CuPy): recorded times are launch times
unless the code synchronizes.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import socket
import threading
import time
import traceback

from .._core.tensor import Tensor
from ..ops._observer import Observer, run_module, run_node, run_op
from ._events import EventList, FunctionEvent

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """What to profile.  ember records everything as CPU time; CUDA is accepted."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set:
    """The activities a profile accepts."""
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


class ProfilerAction(enum.Enum):
    """What a schedule says to do at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A step -> `ProfilerAction` function: after `skip_first` steps, cycles of `wait` idle
    steps, `warmup` steps and `active` recorded steps (the last of which saves the trace),
    `repeat` times (0: forever).  With `skip_first_wait`, the first cycle has no wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("schedule: invalid arguments: wait, warmup, repeat and skip_first "
                         "must be >= 0 and active > 0")
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


# ---------------------------------------------------------------------------
# op names

_OP_NAMES: dict = {}
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z0-9])(?=[A-Z][a-z])")


def op_name(cls) -> str:
    """The profiler's name of an op class: ``_profile_name``, or the class name in
    snake case ("LogSoftmax" -> "log_softmax"), an in-place class ending in "_" ("AddInplace" ->
    "add_")."""
    name = _OP_NAMES.get(cls)
    if name is None:
        name = cls.__dict__.get("_profile_name")
        if name is None:
            base = cls.__name__
            inplace = bool(getattr(cls, "_inplace", False))
            if base.endswith("Inplace"):
                base = base[: -len("Inplace")]
            base = base.lstrip("_")
            name = _CAMEL.sub("_", base).lower() + ("_" if inplace else "")
        _OP_NAMES[cls] = name
    return name


# ---------------------------------------------------------------------------
# the recorder

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stack() -> list:
    """The caller's Python stack outside ember, innermost first, as 'file(line): func'."""
    frames = traceback.extract_stack()[:-1]
    out = []
    for f in reversed(frames):
        if os.path.abspath(f.filename).startswith(_EMBER_DIR + os.sep):
            continue
        out.append(f"{f.filename}({f.lineno}): {f.name}")
    return out


def _shapes(items) -> list:
    return [list(a._data.shape) if isinstance(a, Tensor) else [] for a in items]


def _new_bytes(result) -> int:
    """Bytes of the arrays an op newly allocated for its outputs (views allocate none)."""
    outs = result if isinstance(result, tuple) else (result,)
    total = 0
    for t in outs:
        if isinstance(t, Tensor):
            arr = t._data
            if getattr(arr, "base", None) is None:
                total += arr.nbytes
    return total


class _Recorder(Observer):
    """Turns op calls, backward nodes, module calls and scopes into nested events."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list = []
        self._stacks: dict = {}  # thread id -> open events, innermost last
        self._next_id = 0
        self._lock = threading.Lock()
        self.t0_ns = time.perf_counter_ns()
        self.base_time_ns = time.time_ns()

    # events -----------------------------------------------------------------

    def begin(self, name: str, kind: str, shapes=None) -> FunctionEvent:
        tid = threading.get_native_id()
        stack = _user_stack() if self.with_stack and kind != "backward" else None
        with self._lock:
            event = FunctionEvent(self._next_id, name, kind, tid, 0, shapes, stack)
            self._next_id += 1
            self.events.append(event)
            open_events = self._stacks.setdefault(tid, [])
        if open_events:
            parent = open_events[-1]
            event.cpu_parent = parent
            parent.cpu_children.append(event)
        open_events.append(event)
        event.start_ns = time.perf_counter_ns() - self.t0_ns
        return event

    def end(self, event: FunctionEvent) -> None:
        event.end_ns = time.perf_counter_ns() - self.t0_ns
        open_events = self._stacks.get(event.thread)
        # Events close in order; a scope left open by an exception is closed with it.
        while open_events:
            top = open_events.pop()
            if top is event:
                break
            top.end_ns = event.end_ns

    def close_all(self) -> None:
        now = time.perf_counter_ns() - self.t0_ns
        for open_events in self._stacks.values():
            while open_events:
                open_events.pop().end_ns = now

    # observer ---------------------------------------------------------------

    def op(self, cls, args, params):
        event = self.begin(op_name(cls), "op", _shapes(args) if self.record_shapes else None)
        try:
            result = run_op(self.prev, cls, args, params)
        finally:
            self.end(event)
        if self.profile_memory and not cls._inplace:  # an in-place op allocates no output
            event.self_memory = _new_bytes(result)
        first = result[0] if isinstance(result, tuple) and result else result
        fn = getattr(first, "_grad_fn", None)
        if fn is not None:
            event.sequence_nr = getattr(fn, "_sequence_nr", -1)
        return result

    def node(self, node, grads):
        shapes = _shapes(grads) if self.record_shapes else None
        event = self.begin(node.name(), "backward", shapes)
        event.sequence_nr = getattr(node, "_sequence_nr", -1)
        try:
            return run_node(self.prev, node, grads)
        finally:
            self.end(event)

    def module(self, module, args, kwargs):
        event = self.begin("nn.Module: " + type(module).__name__, "module")
        try:
            return run_module(self.prev, module, args, kwargs)
        finally:
            self.end(event)


# The recorders now installed (a nested profile records into the innermost one).
_ACTIVE: list = []


class record_function(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """Label a region of code in the profile: a context manager or a decorator.

    >>> with ember.profiler.record_function("data loading"):
    ...     batch = next(it)

    Outside a profile it does nothing.
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._open = ()

    def __enter__(self):
        if _ACTIVE:
            self._open = [(rec, rec.begin(self.name, "user_annotation")) for rec in _ACTIVE]
        return self

    def _recreate_cm(self):
        # As a decorator: a fresh scope per call, so that recursive calls nest properly.
        return record_function(self.name, self.args)

    def __exit__(self, *exc):
        for rec, event in reversed(self._open):
            rec.end(event)
        self._open = ()
        return False


# ---------------------------------------------------------------------------
# profile

class _ProfileBase:
    """What the new and the legacy profiler share: recording and the results."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool):
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self._recorder = None
        self._events = None

    def _start_recording(self) -> None:
        if self._recorder is not None:
            return
        rec = _Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        self._recorder = rec
        _ACTIVE.append(rec)
        rec.install()

    def _stop_recording(self) -> None:
        rec = self._recorder
        if rec is None:
            return
        rec.uninstall()
        if rec in _ACTIVE:
            _ACTIVE.remove(rec)
        rec.close_all()
        self._recorder = None
        self._events = EventList(rec.events, profile_memory=self.profile_memory,
                                 with_shapes=False, with_stack=False,
                                 base_time_ns=rec.base_time_ns)

    def _results(self) -> EventList:
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running" if self._recorder is not None
                               else "No profiling results: the profiler has not recorded yet")
        return self._events

    # results ----------------------------------------------------------------

    def events(self) -> EventList:
        """Every recorded event, in the order they started."""
        return self._results()

    @property
    def function_events(self) -> EventList:
        return self._results()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events averaged per name (and per input shapes / top stack frames)."""
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) needs a profile "
                               "recorded with record_shapes=True")
        if group_by_stack_n > 0 and not self.with_stack:
            raise RuntimeError("key_averages(group_by_stack_n>0) needs a profile recorded "
                               "with with_stack=True")
        return self._results().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self):
        return self._results().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of all events' self time (us)."""
        return self._results().self_cpu_time_total

    def export_chrome_trace(self, path: str) -> str:
        """Write a Chrome/Perfetto trace of the recorded events to `path`."""
        self._results().export_chrome_trace(path)
        return path

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write "frame;frame;... value" lines (flame graph input) from ``with_stack``."""
        if not self.with_stack:
            raise RuntimeError("export_stacks needs a profile recorded with with_stack=True")
        with open(path, "w", encoding="utf-8") as f:
            for e in self._results():
                if e.stack and e.kind == "op":
                    value = int(getattr(e, metric))
                    f.write(";".join(reversed(e.stack)) + f";{e.name} {value}\n")


class profile(_ProfileBase):  # noqa: N801 - PyTorch's name
    """Profile the ops, backward nodes and module calls run inside the block.

    >>> with ember.profiler.profile(record_shapes=True) as prof:
    ...     loss = model(x).sum(); loss.backward()
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

    With ``schedule=schedule(wait=1, warmup=1, active=2)``, call ``prof.step()`` after each
    training step; ``on_trace_ready(prof)`` is called at the end of each active window.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback=None):
        super().__init__(record_shapes, profile_memory, with_stack)
        if activities is None:
            activities = supported_activities()
        for a in activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity members, got {a!r}")
        self.activities = set(activities)
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = None
        self._step_event = None

    # lifecycle ----------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        """Begin profiling at step 0 of the schedule."""
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._enter_action(self.current_action)

    def stop(self) -> None:
        """End profiling; a window still recording is finished (and handed on)."""
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._finish_window()
        self.current_action = None

    def step(self) -> None:
        """Mark the end of a training step and move the schedule on."""
        if self.current_action is None:
            return
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous == ProfilerAction.RECORD_AND_SAVE:
            self._finish_window()
            self._enter_action(self.current_action)
        elif previous in recording and self.current_action in recording:
            self._close_step_event()
            self._open_step_event()
        elif previous in recording:
            self._finish_window()
        else:
            self._enter_action(self.current_action)

    def _enter_action(self, action) -> None:
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._events = None
            self._start_recording()
            self._open_step_event()

    def _finish_window(self) -> None:
        self._close_step_event()
        self._stop_recording()
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _open_step_event(self) -> None:
        if self.schedule is not _always_record and self._recorder is not None:
            self._step_event = self._recorder.begin(f"ProfilerStep#{self.step_num}", "step")

    def _close_step_event(self) -> None:
        if self._step_event is not None and self._recorder is not None:
            self._recorder.end(self._step_event)
        self._step_event = None

    def add_metadata(self, key: str, value: str) -> None:
        """Accepted for compatibility; ember's trace does not carry metadata."""

    def add_metadata_json(self, key: str, value: str) -> None:
        """Accepted for compatibility; ember's trace does not carry metadata."""


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False):
    """An ``on_trace_ready`` handler writing each trace to
    ``dir_name/<worker>.<time>.pt.trace.json`` (the layout TensorBoard's profiler plugin
    reads)."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        if use_gzip:
            name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler
