"""The profiler: exact call counts, times consistent with the wall clock, the table's
layout, schedules, record_function, the legacy API and memory figures."""

import time

import pytest

import ember
from ember import nn
from ember._core.grad_mode import PROCESS
from ember.profiler import (
    ProfilerAction, ProfilerActivity, profile, record_function, schedule,
    tensorboard_trace_handler,
)
from ember.profiler.profiler import op_name


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _in_backward(e):
    while e.cpu_parent is not None:
        e = e.cpu_parent
        if e.kind == "backward":
            return True
    return False


def _counts(events, kind):
    """Calls per name of events of `kind`; ops run inside a backward node are left out."""
    out = {}
    for e in events:
        if e.kind == kind and not (kind == "op" and _in_backward(e)):
            out[e.name] = out.get(e.name, 0) + 1
    return out


def _graph_nodes(root):
    """Backward nodes of a graph (without AccumulateGrad), counted by name and op class."""
    names, classes, seen, stack = {}, {}, set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(child for child, _ in node.next_functions)
        if node.name() == "torch::autograd::AccumulateGrad":
            continue
        names[node.name()] = names.get(node.name(), 0) + 1
        cls = op_name(type(node))
        classes[cls] = classes.get(cls, 0) + 1
    return names, classes


def test_call_counts_are_exact_for_raw_ops():
    w = ember.randn(5, requires_grad=True)
    b = ember.randn(5, requires_grad=True)
    x = ember.randn(5)
    reference = ((x * w) + b).exp().sum()
    names, classes = _graph_nodes(reference.grad_fn)
    n = 4
    with profile() as prof:
        for _ in range(n):
            loss = ((x * w) + b).exp().sum()
            loss.backward()
    forward = _counts(prof.events(), "op")
    backward = _counts(prof.events(), "backward")
    assert backward == {k: n * v for k, v in names.items()}
    assert forward == {k: n * v for k, v in classes.items()}
    assert forward["mul"] == forward["add"] == forward["exp"] == forward["sum"] == n
    averages = {a.key: a.count for a in prof.key_averages()}
    assert averages["MulBackward0"] == n and averages["exp"] == n


def test_modules_and_backward_nodes_of_an_mlp():
    model = _mlp()
    x = ember.randn(3, 4)
    names, _ = _graph_nodes(model(x).sum().grad_fn)
    with profile() as prof:
        for _ in range(3):
            model(x).sum().backward()
    counts = {a.key: a.count for a in prof.key_averages()}
    assert counts["nn.Module: Sequential"] == 3
    assert counts["nn.Module: Linear"] == 6
    assert counts["nn.Module: ReLU"] == 3
    for name, count in names.items():
        assert counts[name] == 3 * count
    # ops run inside a module are its children
    linear = next(e for e in prof.events() if e.name == "nn.Module: Linear")
    assert linear.cpu_children and all(c.cpu_parent is linear for c in linear.cpu_children)


def test_times_are_consistent_with_the_wall_clock():
    model = _mlp()
    x = ember.randn(64, 4)
    start = time.perf_counter()
    with profile() as prof:
        with record_function("step"):
            for _ in range(5):
                model(x).sum().backward()
    wall_us = (time.perf_counter() - start) * 1e6
    step = next(e for e in prof.events() if e.name == "step")
    assert 0 < step.cpu_time_total <= wall_us
    assert step.cpu_time_total >= 0.5 * wall_us
    total_self = prof.key_averages().self_cpu_time_total
    assert total_self == pytest.approx(step.cpu_time_total, rel=1e-6)
    for e in prof.events():
        assert e.self_cpu_time_total >= 0
        assert e.cpu_time_total >= e.self_cpu_time_total
        for c in e.cpu_children:
            assert e.start_ns <= c.start_ns <= c.end_ns <= e.end_ns


def test_table_layout():
    model = _mlp()
    x = ember.randn(3, 4)
    with profile(record_shapes=True, profile_memory=True) as prof:
        model(x).sum().backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    lines = table.rstrip("\n").split("\n")
    header = lines[1].split()
    assert " ".join(header) == ("Name Self CPU % Self CPU CPU total % CPU total CPU time avg "
                                "CPU Mem Self CPU Mem # of Calls")
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) == {"-", " "}
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:-2]
    assert len(rows) == 5
    top = sorted(prof.key_averages(), key=lambda a: -a.self_cpu_time_total)[:5]
    assert [r[:len(lines[0].split("  ")[0])].strip() for r in rows] == [a.key for a in top]
    widths = [len(c) for c in lines[0].split("  ") if c]
    assert widths[1:] == [12] * 8
    # grouped by shape: an Input Shapes column, one row per (name, shapes)
    shaped = prof.key_averages(group_by_input_shape=True).table(sort_by="count")
    assert "Input Shapes" in shaped.split("\n")[1]
    assert "[[3, 4]" in shaped or "[3, 4]" in shaped
    plain = profile()
    with plain:
        ember.ones(3).exp()
    assert "CPU Mem" not in plain.key_averages().table()


def test_sort_keys_and_bad_key():
    with profile() as prof:
        for _ in range(3):
            ember.ones(4).exp()
        ember.ones(4).neg()
    by_count = prof.key_averages().table(sort_by="count").split("\n")
    assert by_count[3].split()[0] == "exp"
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="nonsense")


def test_input_shapes_and_memory():
    x = ember.ones(100, dtype=ember.float32)
    with profile(record_shapes=True, profile_memory=True) as prof:
        y = x.exp()
        v = y.view(10, 10)
    exp = next(e for e in prof.events() if e.name == "exp")
    assert exp.input_shapes == [[100]]
    assert exp.self_cpu_memory_usage == 400 and exp.cpu_memory_usage == 400
    view = next(e for e in prof.events() if e.name == "view")
    assert view.self_cpu_memory_usage == 0  # a view allocates nothing
    assert v.shape == (10, 10)
    p = profile()
    with p:
        x.exp()
    with pytest.raises(RuntimeError, match="record_shapes"):
        p.key_averages(group_by_input_shape=True)


def test_with_stack_groups_by_source_line():
    with profile(with_stack=True) as prof:
        ember.ones(3).exp()
    exp = next(e for e in prof.events() if e.name == "exp")
    assert exp.stack and "test_profiler.py" in exp.stack[0]
    table = prof.key_averages(group_by_stack_n=2).table()
    assert "Source Location" in table and "test_profiler.py" in table


def test_record_function_as_context_and_decorator():
    @record_function("helper")
    def helper(t):
        return t.exp()

    with profile() as prof:
        with record_function("outer"):
            helper(ember.ones(2))
            helper(ember.ones(2))
    outer = next(e for e in prof.events() if e.name == "outer")
    helpers = [e for e in prof.events() if e.name == "helper"]
    assert len(helpers) == 2 and all(h.cpu_parent is outer for h in helpers)
    assert all(h.cpu_children[0].name == "exp" for h in helpers)
    with record_function("not profiling"):  # outside a profile: nothing happens
        ember.ones(2).exp()


def test_observer_removed_after_profile_even_on_error():
    with pytest.raises(ValueError):
        with profile():
            raise ValueError("boom")
    assert PROCESS.observer is None
    with profile():
        pass
    assert PROCESS.observer is None


def test_schedule_actions():
    fn = schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1)
    actions = [fn(i) for i in range(8)]
    N, W, R, S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                  ProfilerAction.RECORD_AND_SAVE)
    assert actions == [N, N, W, R, S, N, N, N]
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_schedule_matches_pytorch():
    torch = pytest.importorskip("torch")
    for kw in (dict(wait=1, warmup=1, active=2), dict(wait=2, warmup=1, active=1, repeat=2),
               dict(wait=0, warmup=2, active=3, repeat=1, skip_first=3)):
        ours, theirs = schedule(**kw), torch.profiler.schedule(**kw)
        assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_schedule_with_steps_and_trace_handler(tmp_path):
    windows = []
    x = ember.ones(3)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: windows.append(list(p.events()))) as prof:
        for _ in range(6):
            x.exp()
            prof.step()
    assert len(windows) == 1
    names = [e.name for e in windows[0]]
    assert names.count("exp") == 2
    assert [n for n in names if n.startswith("ProfilerStep")] == ["ProfilerStep#2",
                                                                 "ProfilerStep#3"]
    handler = tensorboard_trace_handler(str(tmp_path / "traces"), worker_name="w0")
    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=handler):
        x.exp()
    files = list((tmp_path / "traces").iterdir())
    assert len(files) == 1 and files[0].name.startswith("w0.")
    assert files[0].name.endswith(".pt.trace.json")


def test_legacy_autograd_profiler():
    x = ember.randn(4, requires_grad=True)
    with ember.autograd.profiler.profile(use_cuda=True, record_shapes=True,
                                         profile_memory=True) as prof:
        (x * x).sum().backward()
    names = [e.name for e in prof.function_events]
    assert "mul" in names and "MulBackward0" in names
    assert "Self CPU time total" in prof.key_averages().table(sort_by="cpu_time_total")
    assert prof.self_cpu_time_total > 0
    with ember.autograd.profiler.profile(enabled=False) as off:
        x.exp()
    assert PROCESS.observer is None and off._events is None


def test_results_before_stopping_raise():
    p = profile()
    with pytest.raises(RuntimeError):
        p.events()
