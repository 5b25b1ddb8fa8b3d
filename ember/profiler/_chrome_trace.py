"""Chrome trace export: the JSON that chrome://tracing and Perfetto (ui.perfetto.dev) open.

The file is the trace-event format's object form: ``{"traceEvents": [...], ...}``.
Each recorded call is a complete event (``"ph": "X"``) with ``name``, ``cat``, ``ts`` and
``dur`` in microseconds, ``pid``, ``tid`` and ``args`` (input shapes, sequence number);
metadata events (``"ph": "M"``) name the process and threads.  Timestamps count from
the start of profiling, so that they keep nanosecond precision as decimals;
``baseTimeNanoseconds`` gives that start as a Unix time.  Events of one thread nest:
a child's [ts, ts + dur] lies within its parent's.
"""

from __future__ import annotations

import json
import os

_CATEGORIES = {"op": "cpu_op", "backward": "cpu_op", "module": "python_function",
               "user_annotation": "user_annotation", "step": "user_annotation"}


def _us(ns: int) -> float:
    """Nanoseconds as microseconds with three exact decimals."""
    return round(ns / 1000.0, 3)


def trace_dict(events, base_time_ns: int = 0) -> dict:
    """The trace as a JSON-ready dict."""
    pid = os.getpid()
    threads = sorted({e.thread for e in events})
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
              "args": {"name": "python (ember)"}}]
    for tid in threads:
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
                      "args": {"name": f"thread {tid}"}})
    for e in sorted(events, key=lambda e: (e.start_ns, -e.end_ns)):
        args = {"External id": e.id}
        if e.input_shapes:
            args["Input Dims"] = [list(s) for s in e.input_shapes]
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.self_memory:
            args["Bytes allocated"] = e.self_memory
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        trace.append({"ph": "X", "cat": _CATEGORIES.get(e.kind, "cpu_op"), "name": e.name,
                      "pid": pid, "tid": e.thread, "ts": _us(e.start_ns),
                      "dur": _us(e.end_ns - e.start_ns), "args": args})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": base_time_ns,
            "traceName": "ember profiler", "traceEvents": trace}


def write_chrome_trace(events, path: str, base_time_ns: int = 0) -> None:
    """Write `events` to `path` as a Chrome trace (JSON); ``.gz`` paths are gzipped."""
    text = json.dumps(trace_dict(events, base_time_ns))
    if str(path).endswith(".gz"):
        import gzip

        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
