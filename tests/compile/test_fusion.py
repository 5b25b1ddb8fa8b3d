"""Fused elementwise chains: generated kernels against the eager ops they replace."""

import os
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._compile import codegen
from ember._compile.fusion import FusedElementwise, find_chains
from ember._compile.program import _metas, _uses
from ember.jit._graph import Graph
from ember.jit._script_module import _record
from ember.ops import _native as native

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

# one chain per row: a function of two same-shaped tensors, and the input domain
CHAINS = {
    "arith": (lambda a, b: (a * 2.0 + b) / (b * b + 1.5) - a, (-2, 2)),
    "tanh_relu": (lambda a, b: ((a * 2.0 + b).tanh() - 0.25).relu() * b, (-2, 2)),
    "sigmoid_exp": (lambda a, b: (a.sigmoid() * b.exp()).neg() + 3.0, (-2, 2)),
    "gelu_silu": (lambda a, b: ember.nn.functional.gelu(a) + ember.nn.functional.silu(b),
                  (-3, 3)),
    "log_sqrt": (lambda a, b: a.log() * b.sqrt() + a.rsqrt(), (0.5, 3)),
    "trig_abs": (lambda a, b: a.sin() * b.cos() - (a - b).abs(), (-2, 2)),
    "square": (lambda a, b: a * a - b * a, (-2, 2)),
}


def _inputs(dtype, low, high, shape=(6, 7), seed=0):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.uniform(low, high, shape).astype(dtype), requires_grad=True)
            for _ in range(2)]


@needs_numba
@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_fused_chain_equals_the_eager_ops_forward_and_backward(name, dtype):
    fn, (low, high) = CHAINS[name]
    compiled = ember.compile(fn)
    a, b = _inputs(dtype, low, high)
    expected = fn(a, b)
    grads = ember.autograd.grad(expected.sum() * 1.0, [a, b])
    compiled(a, b)  # captures
    (graph,) = compiled._compiled.graphs.values()
    assert graph.chains and "FusedElementwise" in graph.describe()
    got = compiled(a, b)  # replays the fused kernel
    got_grads = ember.autograd.grad(got.sum() * 1.0, [a, b])
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), **tol)
    for g, e in zip(got_grads, grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), **tol)


@needs_numba
def test_generated_kernels_match_float64_math_and_gradcheck():
    fn, _ = CHAINS["tanh_relu"]
    compiled = ember.compile(fn)
    a, b = _inputs(np.float64, -2, 2, shape=(3, 4), seed=1)
    compiled(a, b)
    x, y = a.detach().numpy(), b.detach().numpy()
    inner = np.tanh(x * 2.0 + y) - 0.25
    np.testing.assert_allclose(compiled(a, b).detach().numpy(),
                               np.maximum(inner, 0) * y, rtol=1e-13)
    assert ember.autograd.gradcheck(compiled, (a, b))
    # the recorded (create_graph) backward replays the members: second order works too
    assert ember.autograd.gradgradcheck(compiled, (a, b))


@needs_numba
def test_large_arrays_take_the_parallel_kernel(monkeypatch):
    # numba's threads where ember's rule for them allows (native.PARALLEL_MIN: 64K
    # elements with more than two threads)
    monkeypatch.setattr(native, "PARALLEL_MIN", 1 << 16)
    fn, _ = CHAINS["arith"]
    compiled = ember.compile(fn)
    a, b = _inputs(np.float32, -2, 2, shape=(300, 300))
    expected = fn(a, b)
    compiled(a, b)
    got = compiled(a, b)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=2e-6,
                               atol=2e-6)
    (graph,) = compiled._compiled.graphs.values()
    assert ("forward", True) in graph.chains[0].kernel._compiled


@needs_numba
def test_large_flat_chains_are_cut_over_ember_threads(on_two_threads, monkeypatch):
    # on two threads a flat chain of SPLIT_MIN elements or more runs its serial kernel
    # once per thread, each on its share, forward and backward
    fn, _ = CHAINS["arith"]
    compiled = ember.compile(fn)
    a, b = _inputs(np.float32, -2, 2, shape=(600, 600))
    assert a.numel() >= native.SPLIT_MIN
    parts = []
    real = codegen._parallel.run_parts
    monkeypatch.setattr(codegen._parallel, "run_parts",
                        lambda fn, shares: parts.append(len(shares)) or real(fn, shares))
    expected = fn(a, b)
    ga, gb = ember.autograd.grad(expected.sum(), [a, b])
    compiled(a, b)
    parts.clear()
    got = compiled(a, b)
    got_ga, got_gb = ember.autograd.grad(got.sum(), [a, b])
    assert parts == [2, 2]   # (the forward's two shares, then the backward's)
    for x, y in ((got, expected), (got_ga, ga), (got_gb, gb)):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=2e-6,
                                   atol=2e-6)
    (graph,) = compiled._compiled.graphs.values()
    assert set(graph.chains[0].kernel._compiled) == {("forward", False), ("backward", False)}


@needs_numba
def test_with_numba_switched_off_a_fused_node_runs_its_member_ops():
    fn, _ = CHAINS["sigmoid_exp"]
    compiled = ember.compile(fn)
    a, b = _inputs(np.float32, -2, 2)
    compiled(a, b)
    expected = fn(a, b)
    ga, gb = ember.autograd.grad(expected.sum(), [a, b])
    with native.use_numba(False):
        got = compiled(a, b)  # the graph was built with a fused node
        # (one node for the whole graph: the fused op is among those it runs)
        assert FusedElementwise in [type(inner) for inner in got.grad_fn._inner]
        got_ga, got_gb = ember.autograd.grad(got.sum(), [a, b])
    # the member ops ran, not the kernel (which computes in float64): equal to the bit
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(got_ga.numpy(), ga.numpy())
    np.testing.assert_array_equal(got_gb.numpy(), gb.numpy())


@needs_numba
def test_a_chain_numba_cannot_compile_runs_its_member_ops(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))  # (the broken source's file)
    fn, _ = CHAINS["tanh_relu"]
    compiled = ember.compile(fn)
    a, b = _inputs(np.float32, -2, 2, seed=2)
    compiled(a, b)
    (graph,) = compiled._compiled.graphs.values()
    kernel = graph.chains[0].kernel
    monkeypatch.setattr(kernel, "source", kernel.source.replace("tanh(v", "tanh_missing(v"))
    with pytest.warns(RuntimeWarning, match="numba could not compile"):
        got = compiled(a, b)
    expected = fn(a, b)
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    for g, e in zip(ember.autograd.grad(got.sum(), [a, b]),
                    ember.autograd.grad(expected.sum(), [a, b])):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_without_numba_nothing_is_fused():
    fn, _ = CHAINS["arith"]
    with native.use_numba(False):
        compiled = ember.compile(fn)
        a, b = _inputs(np.float32, -2, 2)
        compiled(a, b)
        got = compiled(a, b)
    (graph,) = compiled._compiled.graphs.values()
    assert not graph.chains
    np.testing.assert_array_equal(got.detach().numpy(), fn(a, b).detach().numpy())


def _chains_of(fn, *args):
    trace, returned = _record(fn, args, {}, {})
    graph = Graph.from_trace(trace, returned)
    return find_chains(graph.nodes, _metas(trace, {}), _uses(graph)), graph


def test_chains_stop_at_shared_intermediates_broadcasts_and_non_elementwise_ops():
    a, b = ember.randn(4, 5), ember.randn(4, 5)
    bias = ember.randn(5)

    def shared(x, y):
        t = x * y            # read twice: stays an array
        return (t + 1.0).exp() + t.tanh()

    chains, _ = _chains_of(shared, a, b)
    assert [len(c.nodes) for c in chains] == [4]  # (t + 1).exp() + t.tanh(); t is a leaf
    chains, _ = _chains_of(lambda x, y: (x + bias).relu() * y, a, b)
    assert [len(c.nodes) for c in chains] == [3]  # bias is a broadcast leaf
    assert chains[0].kernel.ndim == 2
    chains, _ = _chains_of(lambda x, y: (x.sum(0) + 1.0).exp() * y, a, b)
    assert [len(c.nodes) for c in chains] == [2]  # the (5,) add and exp; the mul apart
    chains, _ = _chains_of(lambda x, y: ((x.sum(0) + 1.0).exp() + 2.0) * y, a, b)
    assert [len(c.nodes) for c in chains] == [3]  # a (5,) member cannot join a (4, 5) one
    chains, _ = _chains_of(lambda x, y: (x @ y.T).tanh().exp(), a, b)
    assert [len(c.nodes) for c in chains] == [2]
    chains, _ = _chains_of(lambda x, y: x.tanh() + y, a.long().float(), b.double())
    assert chains == []  # mixed dtypes

    def with_inplace(x, y):
        t = (x * 2.0).exp()
        y = y.clone()
        y.mul_(3.0)          # an in-place write between the ops: chains stop at it
        return (t + y).tanh().sin()

    chains, graph = _chains_of(with_inplace, a, b)
    assert sorted(len(c.nodes) for c in chains) == [2, 3]


BROADCASTS = {
    "bias": (lambda x, w, b: (x * w + b).tanh() * x, [(6, 5), (5,), (5,)]),
    "scalar_tensor": (lambda x, w, b: (x - w).sigmoid() * b + x, [(3, 4), (), (1, 4)]),
    "row_stats": (lambda x, m, s: ((x - m) * s).relu() + x * 0.5, [(2, 3, 4), (2, 3, 1),
                                                                     (2, 1, 1)]),
    "leading": (lambda x, w, b: (w * x).exp() / (b + 3.0), [(2, 3, 4), (3, 4), (4,)]),
}


@needs_numba
@pytest.mark.parametrize("name", sorted(BROADCASTS))
def test_chains_with_broadcast_operands_match_eager_and_gradcheck(name):
    fn, shapes = BROADCASTS[name]
    rng = np.random.default_rng(3)
    args = [ember.tensor(rng.uniform(0.5, 1.5, s), requires_grad=True) for s in shapes]
    compiled = ember.compile(fn)
    compiled(*args)
    (graph,) = compiled._compiled.graphs.values()
    assert graph.chains and graph.chains[0].kernel.ndim is not None
    expected = fn(*args)
    got = compiled(*args)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-13)
    grads = ember.autograd.grad(expected.sum(), args)
    got_grads = ember.autograd.grad(got.sum(), args)
    for g, e in zip(got_grads, grads):
        assert g.shape == e.shape
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    assert ember.autograd.gradcheck(compiled, tuple(args))


@needs_numba
def test_a_large_broadcast_chain_runs_in_parallel_in_float32(monkeypatch):
    monkeypatch.setattr(native, "PARALLEL_MIN", 1 << 16)   # (as with more than two threads)
    fn, _ = BROADCASTS["bias"]
    rng = np.random.default_rng(4)
    args = [ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in [(512, 256), (256,), (256,)]]
    compiled = ember.compile(fn)
    compiled(*args)
    got, expected = compiled(*args), fn(*args)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    for g, e in zip(ember.autograd.grad(got.sum(), args),
                    ember.autograd.grad(expected.sum(), args)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-4)
    (graph,) = compiled._compiled.graphs.values()
    assert ("backward", True) in graph.chains[0].kernel._compiled


def test_chain_source_is_built_from_the_table():
    members = (codegen.Member(ember.ops.arithmetic.Mul, (("leaf", 0), ("number", 2.0))),
               codegen.Member(ember.ops.elementwise.Tanh, (("member", 0),)))
    source = codegen.ChainKernel(members, 1).source
    assert "v0 = l0 * 2.0" in source and "v1 = tanh(v0)" in source
    assert "d0 += d1 * (1.0 - v1 * v1)" in source and "gl0 += d0 * (2.0)" in source
    source = codegen.ChainKernel(members, 1, dtype="float32").source
    assert "v0 = l0 * f32(2.0)" in source and "tanh32 as tanh" in source
    assert "d0 += d1 * (f32(1.0) - v1 * v1)" in source


@needs_numba
def test_fused_op_is_a_function_whose_buffers_are_reused():
    compiled = ember.compile(lambda x: (x * 3.0).tanh())
    x = ember.randn(50, 50)
    compiled(x)
    (graph,) = compiled._compiled.graphs.values()
    pool = graph.chains[0].pool
    first = compiled(x)
    assert first.grad_fn is None  # (x does not require grad)
    kept = first.detach().numpy().copy()
    second = compiled(x * 2)
    # `first` is still held: the second call writes elsewhere
    assert not np.shares_memory(first.detach().numpy(), second.detach().numpy())
    np.testing.assert_array_equal(first.detach().numpy(), kept)
    del first, second
    for _ in range(5):
        compiled(x)
    assert pool.allocated == 2
    y = ember.randn(50, 50, requires_grad=True)
    compiled(y)  # a new signature: captured, by an eager run
    out = compiled(y)
    # (its own graph, y requiring grad: one node for the graph, running the fused op)
    assert [type(inner) for inner in out.grad_fn._inner] == [FusedElementwise]


@needs_numba
def test_kernels_are_cached_on_disk_for_later_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    members = (codegen.Member(ember.ops.arithmetic.Mul, (("leaf", 0), ("number", 3.25))),
               codegen.Member(ember.ops.elementwise.Tanh, (("member", 0),)))
    x, out = np.linspace(-1, 1, 7), np.empty(7)
    codegen.ChainKernel(members, 1).forward(out, [x])
    np.testing.assert_allclose(out, np.tanh(3.25 * x), rtol=1e-15)
    assert len(list(tmp_path.glob("chain_*.py"))) == 1
    assert list(tmp_path.glob("__pycache__/*.nbi"))  # numba's index of compiled forms
    # as a new process would: nothing in memory, the machine code read from the disk
    for key in [k for k in codegen._CACHE if "3.25" in k[0]]:
        del codegen._CACHE[key]
    for name in [n for n in sys.modules if n.startswith("ember_compiled_")]:
        monkeypatch.delitem(sys.modules, name)
    kernel = codegen.ChainKernel(members, 1)
    kernel.forward(out, [x])
    assert sum(kernel._compiled[("forward", False)].stats.cache_hits.values()) == 1


def test_without_a_folder_for_them_kernels_are_made_in_memory(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBER_COMPILE_CACHE", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)   # (no home folder)
    monkeypatch.chdir(tmp_path)
    assert codegen.cache_dir() is None
    forward, in_a_file = codegen._load("def forward(out):\n    out[0] = 2.0\n", "forward")
    out = np.zeros(1)
    forward(out)
    assert out[0] == 2.0 and not in_a_file
    assert not list(tmp_path.iterdir())   # (no folder named "~" where it ran)


def test_a_kernel_file_is_named_after_the_helpers_source_too(tmp_path, monkeypatch):
    # the generated file only imports the scalar helpers: after an edit of them (an
    # upgrade) it must get a new name, or numba would load the old machine code
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    assert "def _exp32" in codegen._helpers_source()
    source = "def forward(out):\n    out[0] = 1.0\n"
    codegen._load(source, "forward")
    monkeypatch.setattr(codegen, "_helpers_source", lambda: "def _exp32(v): edited")
    codegen._load(source, "forward")
    assert len(list(tmp_path.glob("chain_*.py"))) == 2


@needs_numba
@pytest.mark.parametrize("fn, b_shape, shared", [
    (lambda a, b: (a + b).relu(), (4, 6), True),    # a residual's add and relu
    (lambda a, b: (a - b).relu(), (4, 6), False),   # opposite signs
    (lambda a, b: (a * b).relu(), (4, 6), False),   # each the other's factor
    (lambda a, b: (a + b).relu(), (1, 6), False),   # b broadcast: its own (summed) array
])
def test_leaves_with_one_gradient_share_its_array(fn, b_shape, shared):
    # the backward kernel writes a gradient once for the leaves whose gradients are the
    # same terms, and both get that array, as eager add hands its one gradient to both
    rng = np.random.default_rng(31)
    a0 = rng.standard_normal((4, 6)).astype(np.float32)
    b0 = rng.standard_normal(b_shape).astype(np.float32)
    compiled = ember.compile(fn)
    grads = []
    for f in (fn, compiled, compiled):   # eager, capture, replay
        a, b = (ember.tensor(x, requires_grad=True) for x in (a0, b0))
        out = f(a, b)
        out.backward(ember.ones_like(out))
        grads.append((out.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
    for got, expected in zip(grads[2], grads[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    (graph,) = compiled._compiled.graphs.values()
    assert len(graph.chains) == 1
    assert (graph.chains[0].kernel.same == [0, 0]) == shared


@needs_numba
def test_a_shared_gradient_is_not_written_over_by_an_op_before_the_chain():
    # the shared array reaches a hardswish (whose backward writes over a gradient the
    # engine owns) and an input: the input's gradient must stay the chain's
    def fn(x, y):
        return (F.hardswish(x) + y).relu()

    rng = np.random.default_rng(32)
    x0, y0 = (rng.standard_normal((8, 5)).astype(np.float32) for _ in range(2))
    compiled = ember.compile(fn)
    results = []
    for f in (fn, compiled, compiled):
        x, y = (ember.tensor(v, requires_grad=True) for v in (x0, y0))
        f(x, y).backward(ember.ones(8, 5))
        results.append((x.grad.numpy(), y.grad.numpy()))
    for got, expected in zip(results[2], results[0]):
        np.testing.assert_array_equal(got, expected)
    (graph,) = compiled._compiled.graphs.values()
    assert graph.chains[0].kernel.same == [0, 0]


@needs_numba
def test_serial_and_threaded_builds_are_cached_apart():
    # numba's disk cache names a build after its function: the serial build of a chain
    # gets a name of its own, so that no process loads the threaded build for it
    kernel = codegen.ChainKernel(
        (codegen.Member(ember.ops.arithmetic.Mul, (("leaf", 0), ("number", 3.0))),), 1)
    serial, threaded = kernel._kernel("forward", False), kernel._kernel("forward", True)
    assert serial.py_func.__name__ == "forward_serial"
    assert threaded.py_func.__name__ == "forward"
    x, out_s, out_t = np.arange(6.0), np.empty(6), np.empty(6)
    serial(out_s, x)
    threaded(out_t, x)
    np.testing.assert_array_equal(out_s, x * 3.0)
    np.testing.assert_array_equal(out_t, x * 3.0)
