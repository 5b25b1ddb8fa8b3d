"""The profiler's summary table, laid out as PyTorch prints it.

Columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then CPU Mem
and Self CPU Mem (when memory was profiled), # of Calls, Input Shapes (when grouped by
shape) and Source Location (when grouped by stack).  Every cell is right-aligned and
followed by two spaces; a rule of dashes frames the header and the rows, and the
footer gives the "Self CPU time total".
"""

from __future__ import annotations

_SORT_KEYS = {
    "cpu_time": lambda e: e.cpu_time,
    "cpu_time_total": lambda e: e.cpu_time_total,
    "self_cpu_time_total": lambda e: e.self_cpu_time_total,
    "count": lambda e: e.count,
    "cpu_memory_usage": lambda e: e.cpu_memory_usage,
    "self_cpu_memory_usage": lambda e: e.self_cpu_memory_usage,
}
# Device columns have no events in a CPU-only profile: sorting by them keeps the order.
_DEVICE_KEYS = ("cuda_time", "cuda_time_total", "self_cuda_time_total", "device_time",
                "device_time_total", "self_device_time_total", "cuda_memory_usage",
                "self_cuda_memory_usage", "device_memory_usage", "self_device_memory_usage")

_NUMBER_WIDTH = 12


def format_time(us: float) -> str:
    """Microseconds as PyTorch shows them: '1.234s', '12.345ms' or '123.456us'."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    """Bytes as '324 B', '1.06 KB', '2.50 MB' or '1.00 GB'."""
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{int(nbytes)} B"


def _percent(part: float, whole: float) -> str:
    return f"{(part / whole if whole else 0.0) * 100:.2f}%"


def build_table(events, *, sort_by, row_limit, max_src_column_width, max_name_column_width,
                max_shapes_column_width, header, top_level_events_only, profile_memory,
                with_shapes, with_stack) -> str:
    """Render `events` (FunctionEvent or FunctionEventAvg items) as the summary table."""
    if sort_by is not None and sort_by not in _SORT_KEYS and sort_by not in _DEVICE_KEYS:
        raise ValueError(f"table: unknown sort_by key {sort_by!r}; expected one of "
                         f"{sorted(_SORT_KEYS)}")
    rows = list(events)
    if top_level_events_only:
        rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
    total_self = sum(e.self_cpu_time_total for e in events)
    if sort_by in _SORT_KEYS:
        rows.sort(key=_SORT_KEYS[sort_by], reverse=True)
    if row_limit is not None and row_limit > 0:
        rows = rows[:row_limit]
    if not rows:
        return ""

    name_width = max(len(e.key) for e in rows) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    widths = [name_width] + [_NUMBER_WIDTH] * 5
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        widths += [_NUMBER_WIDTH] * 2
    headers.append("# of Calls")
    widths.append(_NUMBER_WIDTH)
    if with_shapes:
        shape_width = min(max(len(str(e.input_shapes)) for e in rows) + 4,
                          max_shapes_column_width)
        headers.append("Input Shapes")
        widths.append(shape_width)
    if with_stack:
        src_width = min(max([len(s) for e in rows for s in (e.stack or [])] + [15]) + 4,
                        max_src_column_width)
        headers.append("Source Location")
        widths.append(src_width)

    def line(cells) -> str:
        return "".join(_fit(c, w).rjust(w) + "  " for c, w in zip(cells, widths))

    rule = "".join("-" * w + "  " for w in widths)
    out = []
    if header is not None:
        out += ["=" * len(rule), header]
    out += [rule, line(headers), rule]
    for e in rows:
        cells = [e.key, _percent(e.self_cpu_time_total, total_self),
                 format_time(e.self_cpu_time_total), _percent(e.cpu_time_total, total_self),
                 format_time(e.cpu_time_total), format_time(e.cpu_time)]
        if profile_memory:
            cells += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        cells.append(str(e.count))
        if with_shapes:
            cells.append(str(e.input_shapes))
        stack = list(e.stack or [])
        if with_stack:
            cells.append(stack[0] if stack else "")
        out.append(line(cells))
        for frame in stack[1:] if with_stack else ():
            out.append(line([""] * (len(widths) - 1) + [frame]))
    out.append(rule)
    out.append(f"Self CPU time total: {format_time(total_self)}")
    return "\n".join(out) + "\n"


def _fit(text: str, width: int) -> str:
    """Cut a cell that is wider than its column, marking the cut with '...'."""
    text = str(text)
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."
