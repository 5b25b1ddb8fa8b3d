"""What the profiler records: one `FunctionEvent` per op call, backward node, module call
or ``record_function`` scope, and `EventList`, their list with the summary methods.

Times are kept as integer nanoseconds from the start of profiling and shown in
microseconds, as PyTorch does (``cpu_time_total`` is in us).  An event's self time is
its total time less that of its direct children (the events that started and ended
inside it on the same thread).
"""

from __future__ import annotations

from collections import OrderedDict

from ._chrome_trace import write_chrome_trace
from ._table import build_table


class Interval:
    """The start and end of an event, in microseconds from the start of profiling."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float):
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start

    def __repr__(self) -> str:
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class FunctionEvent:
    """One recorded call.

    ``name``: the op ("mul", "matmul"), the backward node ("MulBackward0"), the module
    ("nn.Module: Linear") or the ``record_function`` label; ``kind``: "op",
    "backward", "module", "user_annotation" or "step"; ``cpu_time_total`` and
    ``self_cpu_time_total`` in microseconds; ``cpu_memory_usage`` and
    ``self_cpu_memory_usage`` in bytes (recorded with ``profile_memory``);
    ``input_shapes`` (with ``record_shapes``) and ``stack`` (with ``with_stack``).
    """

    __slots__ = ("id", "name", "kind", "thread", "start_ns", "end_ns", "input_shapes",
                 "stack", "self_memory", "sequence_nr", "cpu_parent", "cpu_children")

    def __init__(self, id: int, name: str, kind: str, thread: int, start_ns: int,
                 input_shapes=None, stack=None, sequence_nr: int = -1):
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.self_memory = 0
        self.sequence_nr = sequence_nr
        self.cpu_parent = None
        self.cpu_children = []

    # PyTorch's FunctionEvent attributes -------------------------------------

    @property
    def key(self) -> str:
        return self.name

    @property
    def count(self) -> int:
        return 1

    @property
    def time_range(self) -> Interval:
        return Interval(self.start_ns / 1000.0, self.end_ns / 1000.0)

    @property
    def cpu_time_total(self) -> float:
        """Time from start to end, children included (us)."""
        return (self.end_ns - self.start_ns) / 1000.0

    @property
    def self_cpu_time_total(self) -> float:
        """Time not spent in a child event (us)."""
        inner = sum(c.end_ns - c.start_ns for c in self.cpu_children)
        return (self.end_ns - self.start_ns - inner) / 1000.0

    cpu_time = cpu_time_total

    @property
    def cpu_memory_usage(self) -> int:
        """Bytes allocated by this call's outputs and those of its children."""
        return self.self_memory + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.self_memory

    @property
    def is_async(self) -> bool:
        return False

    @property
    def device_type(self) -> str:
        return "CPU"

    @property
    def scope(self) -> int:
        """1 for a backward node, 0 otherwise (PyTorch's RecordScope numbering is wider)."""
        return 1 if self.kind == "backward" else 0

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time={self.cpu_time_total:.3f}us thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """Events grouped under one key (name, and shapes/stack when asked): sums and counts."""

    def __init__(self, key: str = "", input_shapes=None, stack=None):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = input_shapes
        self.stack = stack
        self.kind = None

    def add(self, other) -> FunctionEventAvg:
        """Add an event (or another average) into this one."""
        if self.kind is None:
            self.kind = other.kind
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    def __iadd__(self, other) -> FunctionEventAvg:
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        """Average total time per call (us)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us"
                f" cpu_time={self.cpu_time:.3f}us count={self.count} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events (or of averages) with PyTorch's summary methods."""

    def __init__(self, *args, profile_memory: bool = False, with_shapes: bool = False,
                 with_stack: bool = False, base_time_ns: int = 0):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._with_shapes = with_shapes
        self._with_stack = with_stack
        self._base_time_ns = base_time_ns

    def _like(self, items, **overrides) -> EventList:
        opts = {"profile_memory": self._profile_memory, "with_shapes": self._with_shapes,
                "with_stack": self._with_stack, "base_time_ns": self._base_time_ns}
        opts.update(overrides)
        return EventList(items, **opts)

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the self times of all events (us): the time the profile covers."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """One `FunctionEventAvg` per name (and input shapes / top stack frames if asked),
        in order of first appearance."""
        groups: OrderedDict = OrderedDict()
        for e in self:
            key = (e.key,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shapes else None,
                    list(e.stack[:group_by_stack_n]) if group_by_stack_n > 0 else None)
            avg.add(e)
        return self._like(groups.values(), with_shapes=group_by_input_shapes,
                          with_stack=group_by_stack_n > 0)

    def total_average(self) -> FunctionEventAvg:
        """All events added into one average, keyed "Total"."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The summary table, in PyTorch's layout (see ``ember/profiler/_table.py``)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only,
                           profile_memory=self._profile_memory,
                           with_shapes=self._with_shapes, with_stack=self._with_stack)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome/Perfetto trace (JSON, "X" events)."""
        write_chrome_trace(self, path, self._base_time_ns)
