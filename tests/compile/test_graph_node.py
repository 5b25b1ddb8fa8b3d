"""A compiled graph replayed for training as one autograd node (_compile/graph_node.py):
what eager autograd guarantees still holds."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._compile.graph_node import GraphNode
from ember.ops import _native as native
from tests.autograd.test_grad_steal import _Doubles  # (a user Function: `grad * 2`)


class Net(nn.Module):
    """Residual adds, a view, dropout, layer norm, and a parameter used twice."""

    def __init__(self, p=0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 8)
        self.ln = nn.LayerNorm(8)
        self.drop = nn.Dropout(p)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = h + self.drop(self.fc2(self.ln(h)))
        h = self.fc2(h) * h                       # fc2 again
        return self.head(h.view(-1, 16)).sigmoid()


def _pair(p=0.0, dtype=np.float64, seed=0):
    ember.manual_seed(seed)
    model = Net(p)
    if dtype == np.float64:
        model = model.double()
    compiled = ember.compile(model)
    x = ember.tensor(np.random.default_rng(1).standard_normal((4, 6)).astype(dtype),
                     requires_grad=True)
    compiled(x)  # (the capture: an eager run)
    return model, compiled, x


def _grads(model, x, out):
    return [g.numpy() for g in ember.autograd.grad(out.sum(), [x, *model.parameters()])]


def test_one_node_stands_for_the_graph_and_its_gradients_equal_eager():
    model, compiled, x = _pair()
    out = compiled(x)
    node = out.grad_fn
    assert isinstance(node, GraphNode) and node.name() == "CompiledFunctionBackward"
    # its edges lead to the input and the parameters that require grad, in order of use
    leaves = {id(e[0].variable) for e in node.next_functions}
    assert leaves == {id(t) for t in [x, *model.parameters()]}
    inner = [type(n).__name__ for n in node._inner]
    assert "Reshaped" in inner and "Island" in inner  # (the view and the dropout call)
    expected = model(x)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-13)
    for got, want in zip(_grads(model, x, out), _grads(model, x, expected)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_gradcheck_through_the_graph_node():
    model, compiled, x = _pair()

    def fn(x):
        return compiled(x)
    assert isinstance(fn(x).grad_fn, GraphNode)
    assert ember.autograd.gradcheck(fn, (x,))


@pytest.mark.parametrize("what", ["parameter", "input"])
def test_an_in_place_write_before_backward_raises_as_eagerly(what):
    model, compiled, x = _pair()
    for run in (model, compiled):
        out = run(x)
        with ember.no_grad():
            (model.fc1.weight if what == "parameter" else x).mul_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_an_in_place_write_to_a_saved_output_raises_as_eagerly():
    model, compiled, x = _pair()
    for run in (model, compiled):
        out = run(x)  # sigmoid saves its output
        out.mul_(2.0)
        with pytest.raises(RuntimeError, match="output 0 of|modified by an inplace"):
            out.sum().backward()


def test_retain_graph_and_a_second_backward():
    model, compiled, x = _pair()
    out = compiled(x)
    out.sum().backward(retain_graph=True)
    first = model.fc1.weight.grad.numpy().copy()
    out.sum().backward()
    np.testing.assert_allclose(model.fc1.weight.grad.numpy(), 2 * first, rtol=1e-13)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()


def test_second_order_gradients_replay_the_graph_with_the_same_dropout_masks():
    model, compiled, x = _pair(p=0.5)
    ember.manual_seed(5)
    out = compiled(x)
    assert isinstance(out.grad_fn, GraphNode)
    ember.rand(3)  # (draws between the forward and the backward)
    (g,) = ember.autograd.grad((out ** 2).sum(), [x], create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), [x])
    after_compiled = ember.rand(1).item()  # (the replayed copy put the random state back)
    ember.manual_seed(5)
    ref = model(x)
    ember.rand(3)
    (rg,) = ember.autograd.grad((ref ** 2).sum(), [x], create_graph=True)
    (rgg,) = ember.autograd.grad(rg.sum(), [x])
    after_eager = ember.rand(1).item()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(g.detach().numpy(), rg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), rgg.numpy(), rtol=1e-11)
    # the random state moved on as in the eager run: the copy's draws were undone
    assert after_compiled == after_eager


def test_hooks_on_parameters_and_outputs_see_the_gradients():
    model, compiled, x = _pair()
    seen = {}
    model.fc2.weight.register_hook(lambda g: seen.update(weight=g.numpy().copy()))
    out = compiled(x)
    out.register_hook(lambda g: g * 3)
    out.sum().backward()
    np.testing.assert_allclose(seen["weight"], model.fc2.weight.grad.numpy())
    expected = _grads(model, x, model(x) * 3)[1]  # fc1.weight's
    np.testing.assert_allclose(model.fc1.weight.grad.numpy(), expected, rtol=1e-12)


def test_grad_with_respect_to_the_input_leaves_the_parameters_alone():
    model, compiled, x = _pair()
    (gx,) = ember.autograd.grad(compiled(x).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), _grads(model, x, model(x))[0], rtol=1e-12)
    assert all(p.grad is None for p in model.parameters())


def test_gradients_that_reach_two_parameters_are_separate_arrays():
    a = nn.Parameter(ember.zeros(3, dtype=ember.float64))
    b = nn.Parameter(ember.zeros(3, dtype=ember.float64))

    class Shift(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = a, b

        def forward(self, x):
            return x + (self.a + self.b)  # Add passes its gradient on to both, as it is

    compiled = ember.compile(Shift())
    x = ember.ones(2, 3, dtype=ember.float64)
    compiled(x)
    compiled(x).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.add_(1.0)
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])


class _With(nn.Module):
    """`fn(self.lin, x)` as a module (a closure's weights would run eagerly)."""

    def __init__(self, fn, size):
        super().__init__()
        self.lin, self.fn = nn.Linear(size, 3), fn

    def forward(self, x):
        return self.fn(self.lin, x)


def test_integer_outputs_carry_no_gradient():
    compiled = ember.compile(_With(lambda lin, x: (lin(x), lin(x).argmax(1)), 4))
    x = ember.randn(5, 4)
    compiled(x)
    out, index = compiled(x)
    assert isinstance(out.grad_fn, GraphNode) and index.grad_fn is None
    assert not index.requires_grad and index.dtype == ember.int64


def _write_through_a_view(h):
    h[:, 0].mul_(2.0)  # (eager code rebases the view's base: the op-by-op replay does too)
    return h


def test_graphs_that_keep_the_op_by_op_replay():
    cases = {
        "a user's autograd.Function": lambda lin, x: _Doubles.apply(lin(x)),
        "an in-place op": lambda lin, x: _write_through_a_view(lin(x)) * 2,
        "an output is a view of an input or parameter": lambda lin, x: (lin.weight.t(),
                                                                        lin(x)),
    }
    for reason, fn in cases.items():
        module = _With(fn, 3)
        lin = module.lin
        compiled = ember.compile(module)
        x = ember.randn(2, 3)
        compiled(x)
        (graph,) = compiled._compiled.graphs.values()
        assert graph.whole is None and graph.eager_training.startswith(reason)
        out = compiled(x)
        out = out[1] if isinstance(out, tuple) else out
        assert not isinstance(out.grad_fn, GraphNode)
        (g,) = ember.autograd.grad(out.sum(), [lin.weight])
        want = module(x)
        (want,) = ember.autograd.grad((want[1] if isinstance(want, tuple) else want).sum(),
                                      [lin.weight])
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-6)


def test_no_grad_and_anomaly_mode_use_the_op_by_op_replay():
    model, compiled, x = _pair()
    with ember.no_grad():
        assert compiled(x).grad_fn is None
    with ember.autograd.detect_anomaly():
        assert not isinstance(compiled(x).grad_fn, GraphNode)
    assert isinstance(compiled(x).grad_fn, GraphNode)


def test_sparse_embedding_gradients_pass_through_the_graph_node():
    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.lin = nn.Embedding(10, 4, sparse=True), nn.Linear(4, 2)

        def forward(self, i):
            return self.lin(self.emb(i)).sum(1)

    ember.manual_seed(0)
    model = Bag()
    compiled = ember.compile(model)
    index = ember.tensor([1, 2, 2, 5])
    compiled(index)
    out = compiled(index)
    assert isinstance(out.grad_fn, GraphNode)
    out.sum().backward()
    got = model.emb.weight.grad
    assert got.is_sparse
    got, lin = got.to_dense().numpy().copy(), model.lin.weight.grad.numpy().copy()
    model.zero_grad()
    model(index).sum().backward()
    np.testing.assert_allclose(got, model.emb.weight.grad.to_dense().numpy(), rtol=1e-6)
    np.testing.assert_allclose(lin, model.lin.weight.grad.numpy(), rtol=1e-6)


def test_second_order_gradients_leave_batch_norm_statistics_as_one_forward_left_them():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(),
                             nn.Linear(4, 1)).double()

    model, twin = make(), make()
    compiled = ember.compile(twin)
    x = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)
    compiled(x)
    model(x)  # (both have now seen one batch)
    outs = []
    for run in (model, compiled):
        out = run(x)
        assert isinstance(out.grad_fn, GraphNode) == (run is compiled)
        (g,) = ember.autograd.grad(out.sum(), [x], create_graph=True)
        (gg,) = ember.autograd.grad((g ** 2).sum(), [x])
        outs.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-10)
    # two batches seen by each, however many times the compiled graph ran again
    assert int(twin[1].num_batches_tracked) == int(model[1].num_batches_tracked) == 2
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(twin[1], name).numpy(),
                                   getattr(model[1], name).numpy(), rtol=1e-13)


def test_gradients_of_two_calls_accumulate_as_eagerly():
    model, compiled, x = _pair(p=0.5)
    y = x.detach() * 0.5
    ember.manual_seed(9)
    (compiled(x).sum() + compiled(y).sum()).backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    ember.manual_seed(9)
    (model(x).sum() + model(y).sum()).backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-12, atol=1e-15)


class _Detaching(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.a, self.b, self.how = nn.Linear(3, 3), nn.Linear(3, 3), how

    def forward(self, x):
        h = self.a(x)
        cut = h.detach() if self.how == "detach" else h.data
        return self.b(cut) * 2 + x


@pytest.mark.parametrize("how", ["detach", "data"])
@pytest.mark.parametrize("training_replay", [True, False])
def test_detach_and_data_cut_the_graph_in_a_replay(how, training_replay):
    model = _Detaching(how)
    compiled = ember.compile(model)
    compiled(ember.randn(2, 3))
    (graph,) = compiled._compiled.graphs.values()
    if not training_replay:
        graph.whole = None
    x = ember.randn(2, 3)
    out = compiled(x)
    assert isinstance(out.grad_fn, GraphNode) == training_replay
    out.sum().backward()
    assert model.a.weight.grad is None  # (eagerly too: the detached path takes none)
    got = model.b.weight.grad.numpy().copy()
    model.zero_grad()
    model(x).sum().backward()
    np.testing.assert_allclose(got, model.b.weight.grad.numpy(), rtol=1e-6)


def test_a_result_computed_from_detached_values_needs_no_grad():
    compiled = ember.compile(_With(lambda lin, x: (lin(x).detach() * 2, lin(x)), 3))
    x = ember.randn(2, 3)
    compiled(x)
    frozen, live = compiled(x)
    assert not frozen.requires_grad and frozen.grad_fn is None  # (as eagerly)
    assert isinstance(live.grad_fn, GraphNode)


def test_an_op_with_an_output_that_takes_no_gradient_keeps_the_op_by_op_replay():
    # (slogdet's sign is a float output that takes no gradient)
    compiled = ember.compile(_With(lambda lin, x: ember.linalg.slogdet(lin(x)).sign * 2, 3))
    x = ember.randn(3, 3)
    compiled(x)
    (graph,) = compiled._compiled.graphs.values()
    assert graph.whole is None and "no gradient" in graph.eager_training
    assert not compiled(x).requires_grad  # (as eagerly)


def test_outputs_that_view_a_result_share_its_version_checks():
    def fn(lin, x):
        h = lin(x).sigmoid()          # sigmoid saves h
        return h.view(-1), h.t()

    module = _With(fn, 3)
    compiled = ember.compile(module)
    x = ember.randn(2, 3)
    compiled(x)
    flat, turned = compiled(x)
    assert isinstance(flat.grad_fn, GraphNode) and isinstance(turned.grad_fn, GraphNode)
    (g,) = ember.autograd.grad(flat.sum() + turned.sum(), [module.lin.weight])
    ref = module(x)
    (want,) = ember.autograd.grad(ref[0].sum() + ref[1].sum(), [module.lin.weight])
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-6)
    for run in (module, compiled):  # a write into either view is seen by sigmoid's check
        flat, turned = run(x)
        turned.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            flat.sum().backward()


def test_a_step_is_freed_by_reference_counting_even_when_an_output_is_saved():
    import gc
    import weakref

    model, compiled, x = _pair(p=0.5)  # (its sigmoid saves the graph's output; dropout)
    gc.collect()
    gc.disable()
    try:
        refs = []
        for _ in range(3):
            out = compiled(x)
            refs.append((weakref.ref(out), weakref.ref(out.grad_fn)))
            out.sum().backward(retain_graph=True)  # (saved entries kept alive by the node)
            del out
        assert all(r() is None for pair in refs for r in pair)
    finally:
        gc.enable()


@pytest.mark.skipif(not native.enabled(), reason="fusion needs numba")
def test_a_fused_chain_on_a_result_of_the_graph_differentiates_its_members_without_numba():
    module = _With(lambda lin, x: (lin(x) * 2.0 + 1.0).tanh() * lin(x), 3)
    compiled = ember.compile(module)
    x = ember.randn(4, 3)
    compiled(x)  # (captured with numba on: the chain is one fused op)
    (graph,) = compiled._compiled.graphs.values()
    assert graph.chains and graph.whole is not None
    (want,) = ember.autograd.grad(module(x).sum(), [module.lin.weight])
    with native.use_numba(False):  # the fused op's backward runs its member ops
        (got,) = ember.autograd.grad(compiled(x).sum(), [module.lin.weight])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_in_place_ops_on_results_train_like_eager_and_check_what_was_saved():
    def fn(lin, x):
        h = lin(x)
        y = F.relu(h, inplace=True)      # into a result nothing else read
        z = y * 0.5
        z += x                           # into a result, with another operand
        return F.relu(z, inplace=True)   # into an in-place op's result

    module = _With(fn, 3)
    compiled = ember.compile(module)
    x = ember.randn(4, 3, requires_grad=True)
    compiled(x)
    (graph,) = compiled._compiled.graphs.values()
    assert graph.whole is not None
    out = compiled(x)
    assert isinstance(out.grad_fn, GraphNode)
    got = ember.autograd.grad(out.sum(), [x, module.lin.weight])
    ref = module(x)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    for g, w in zip(got, ember.autograd.grad(ref.sum(), [x, module.lin.weight])):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)

    def saved_then_written(lin, x):
        h = lin(x)
        y = h * x                        # Mul saves h
        return F.relu(h, inplace=True) + y

    module = _With(saved_then_written, 3)
    compiled = ember.compile(module)
    compiled(x)
    (graph,) = compiled._compiled.graphs.values()
    assert graph.whole is not None
    for run in (module, compiled):       # eager code raises in backward: so does the replay
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run(x).sum().backward()


def test_ops_that_mark_a_float_output_non_differentiable_say_so():
    """The training replay decides which outputs carry gradients before the forward runs:
    an op whose forward marks a float output non-differentiable must declare it
    (``_marks_outputs``), so that its graphs keep the op-by-op replay."""
    import inspect

    from ember._core.function import Function

    marking, todo = {}, [Function]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        forward = cls.__dict__.get("forward")
        if cls.__module__.startswith("ember.") and forward is not None and (
                "mark_non_differentiable" in inspect.getsource(forward.__func__)):
            marking[cls.__name__] = cls._marks_outputs
    # (Frexp marks its int32 exponent, which no gradient reaches anyway)
    # (LUFactor marks its int32 pivots and info)
    assert marking == {"Frexp": False, "ViewDtype": True, "Slogdet": True, "LU": True,
                       "LUFactor": False}
