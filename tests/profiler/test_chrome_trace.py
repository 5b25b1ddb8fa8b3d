"""export_chrome_trace writes the trace-event format that Chrome's tracing and Perfetto
open: required keys and types, and events of one thread properly nested."""

import gzip
import json

import ember
from ember import nn
from ember.profiler import profile, record_function

_X_KEYS = {"ph": str, "name": str, "cat": str, "pid": int, "tid": int, "args": dict}


def _record():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("step"):
            model(ember.randn(3, 4)).sum().backward()
    return prof


def _check_trace(trace: dict, prof) -> None:
    assert isinstance(trace["traceEvents"], list)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert len(complete) == len(prof.events())
    assert {e["name"] for e in meta} >= {"process_name", "thread_name"}
    for e in meta:
        assert isinstance(e["args"]["name"], str)
    for e in complete:
        for key, kind in _X_KEYS.items():
            assert isinstance(e[key], kind), (key, e)
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0
    assert {e["cat"] for e in complete} >= {"cpu_op", "user_annotation", "python_function"}
    mm = [e for e in complete if e["name"] == "nn.Module: Linear"]
    assert len(mm) == 2
    shaped = [e for e in complete if "Input Dims" in e["args"]]
    assert shaped and all(isinstance(d, list) for e in shaped for d in e["args"]["Input Dims"])
    # nesting: on each thread, events either nest or are disjoint (integer nanoseconds)
    by_thread = {}
    for e in complete:
        start = round(e["ts"] * 1000)
        by_thread.setdefault((e["pid"], e["tid"]), []).append(
            (start, -round(e["dur"] * 1000), start + round(e["dur"] * 1000), e["name"]))
    for events in by_thread.values():
        events.sort()
        open_ends = []
        for start, _, end, name in events:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends:
                assert end <= open_ends[-1], f"{name} overlaps its parent's end"
            open_ends.append(end)
    # the step scope is the outermost event and contains every other one
    step = next(e for e in complete if e["name"] == "step")
    for e in complete:
        assert step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1e-3


def test_chrome_trace_is_valid(tmp_path):
    prof = _record()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    _check_trace(trace, prof)
    assert isinstance(trace["baseTimeNanoseconds"], int)


def test_gzipped_trace(tmp_path):
    prof = _record()
    path = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(path))
    with gzip.open(path, "rt") as f:
        _check_trace(json.load(f), prof)
