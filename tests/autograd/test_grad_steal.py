"""Which gradients a leaf keeps as its .grad without a copy.

Only arrays the engine owns are adopted: ones it made itself in the backward pass (a sum of
several gradients, the implicit root gradient), the gradients of built-in nodes that declare
them freshly allocated (``_fresh_grads``: matmul, addmm, convolution, normalization,
embedding), and views of owned gradients handed on by view nodes (``weight.t()`` in a linear
layer).  The caller's gradient, any other node's result and anything a hook saw or returned
are copied, so that writing into .grad later (accumulation, optimizers, clipping) never
changes memory someone else reads.
"""

import numpy as np
import pytest

import ember
from ember._core.accumulate import AccumulateGrad


def _shares(a, b) -> bool:
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


@pytest.fixture
def adopted(monkeypatch):
    """The `owned` flag of every call of AccumulateGrad.accumulate, in order."""
    flags = []
    real = AccumulateGrad.accumulate

    def spy(self, grad, create_graph, owned=False):
        flags.append(owned)
        return real(self, grad, create_graph, owned)

    monkeypatch.setattr(AccumulateGrad, "accumulate", spy)
    return flags


def test_engine_made_sum_is_kept_without_copy(adopted):
    w = ember.randn(5, requires_grad=True)
    (w * 2 + w * 3 + w * 4).sum().backward()
    assert adopted == [True]
    np.testing.assert_allclose(w.grad.numpy(), 9.0)


def test_implicit_root_gradient_of_a_leaf_is_kept(adopted):
    w = ember.tensor(2.0, requires_grad=True)
    w.backward()
    assert adopted == [True]
    assert w.grad.item() == 1.0


class _Doubles(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_a_node_result_is_copied(adopted):
    # The engine did not make a user Function's result, so it cannot know who else holds
    # it (a built-in op that allocates its gradients says so: `_fresh_grads`).
    w = ember.randn(5, requires_grad=True)
    _Doubles.apply(w).sum().backward()
    assert adopted == [False]
    np.testing.assert_allclose(w.grad.numpy(), 2.0)
    w.grad = None
    (w * 2).sum().backward()
    assert adopted == [False, True]
    np.testing.assert_allclose(w.grad.numpy(), 2.0)


@pytest.mark.parametrize("create_graph", [False, True])
def test_user_gradient_is_never_aliased(create_graph):
    w = ember.randn(4, requires_grad=True)
    g = ember.ones(4, requires_grad=create_graph)
    (w * 1).backward(g, create_graph=create_graph)
    assert not _shares(w.grad, g)
    w.grad = None
    w.backward(g, create_graph=create_graph)  # straight into the leaf: the caller's tensor
    assert not _shares(w.grad, g)
    with ember.no_grad():
        w.grad.add_(1)
    np.testing.assert_array_equal(g.detach().numpy(), 1.0)


def test_user_gradient_of_a_non_leaf_input_is_not_aliased():
    w = ember.randn(3, requires_grad=True)
    g = ember.ones(3)
    y = w * 2
    y.backward(g, inputs=[y])
    assert not _shares(y.grad, g)
    z = w * 2
    z.retain_grad()
    z.backward(g)
    assert not _shares(z.grad, g)


def test_gradient_a_hook_returns_and_keeps_is_not_aliased():
    w = ember.randn(3, requires_grad=True)
    kept = []

    def hook(grad):
        kept.append(grad * 5)
        return kept[-1]

    w.register_hook(hook)
    (w * 2).sum().backward()
    assert not _shares(w.grad, kept[0])
    (w * 2).sum().backward()  # accumulates into w.grad in place
    np.testing.assert_allclose(kept[0].numpy(), 10.0)
    np.testing.assert_allclose(w.grad.numpy(), 20.0)


def test_engine_sum_seen_by_a_hook_is_copied():
    w = ember.randn(3, requires_grad=True)
    stash = []
    w.register_hook(stash.append)
    (w * 2 + w * 3).sum().backward()  # the engine sums the two: a hook sees that sum
    assert not _shares(w.grad, stash[0])
    (w * 3).sum().backward()
    np.testing.assert_allclose(stash[0].numpy(), 5.0)
    np.testing.assert_allclose(w.grad.numpy(), 8.0)


class _KeepsItsGradient(ember.autograd.Function):
    """Identity whose backward returns a tensor it keeps a reference to."""

    kept = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        out = grad * 1
        _KeepsItsGradient.kept.append(out)
        return out


def test_node_result_is_never_written_by_accumulation():
    _KeepsItsGradient.kept.clear()
    w = ember.randn(3, requires_grad=True)
    (_KeepsItsGradient.apply(w) + w * 2 + w * 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6.0)
    np.testing.assert_allclose(_KeepsItsGradient.kept[0].numpy(), 1.0)
    assert not _shares(w.grad, _KeepsItsGradient.kept[0])


def test_linear_weight_gradient_is_c_contiguous():
    lin = ember.nn.Linear(3, 4)
    lin(ember.randn(6, 3)).sum().backward()
    assert lin.weight.grad._data.flags.c_contiguous
    x = ember.randn(6, 3)
    expected = np.ones((6, 4), np.float32).T @ x.numpy()
    lin.weight.grad = None
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), expected, rtol=1e-6)


def test_same_gradient_to_two_leaves_is_not_shared():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    (a + b).sum().backward()
    assert not _shares(a.grad, b.grad)
    a.grad.add_(1)
    np.testing.assert_allclose(b.grad.numpy(), 1.0)


def test_broadcast_gradient_is_copied_into_a_writable_grad():
    w = ember.randn(2, 3, requires_grad=True)
    (w + 1).sum().backward()  # sum's backward hands out a read-only broadcast view
    assert w.grad._data.flags.writeable
    w.grad += 1
    np.testing.assert_allclose(w.grad.numpy(), 2.0)


@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_aliasing_matches_pytorch(lib_name):
    lib = ember if lib_name == "ember" else pytest.importorskip("torch")
    w = lib.ones(3, requires_grad=True)
    g = lib.full((3,), 2.0)
    (w * 1).backward(g)
    w.backward(g)
    kept = []
    w.register_hook(lambda grad: kept.append(grad * 1) or kept[-1])
    (w * 3).sum().backward()
    assert not _shares(w.grad, g) and not _shares(w.grad, kept[0])
    np.testing.assert_allclose(w.grad.numpy(), 7.0)
    np.testing.assert_allclose(g.numpy(), 2.0)
    np.testing.assert_allclose(kept[0].numpy(), 3.0)


def test_layer_gradients_are_adopted_without_copy(adopted):
    # linear (addmm through weight.t()), conv, layer norm and embedding allocate their
    # gradients: every parameter keeps its gradient as it comes
    model = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3), ember.nn.Flatten(),
                                ember.nn.LayerNorm(4), ember.nn.Linear(4, 3))
    emb = ember.nn.Embedding(5, 4)
    x = ember.randn(2, 1, 4, 3)
    (model(x).sum() + emb(ember.tensor([1, 3])).sum()).backward()
    assert adopted == [True] * 7, adopted
    params = [p.grad for p in model.parameters()] + [emb.weight.grad]
    for i, a in enumerate(params):
        assert a._data.flags.writeable
        for b in params[i + 1:]:
            assert not _shares(a, b)


def test_incoming_gradient_passed_through_is_copied():
    # addmm hands its incoming gradient on to `input` unchanged: that one is not adopted
    _KeepsItsGradient.kept.clear()
    m = ember.randn(2, 3, requires_grad=True)
    a, b = ember.randn(2, 4), ember.randn(4, 3)
    _KeepsItsGradient.apply(ember.addmm(m, a, b)).sum().backward()
    assert not _shares(m.grad, _KeepsItsGradient.kept[0])
    m.grad.add_(1)
    np.testing.assert_allclose(_KeepsItsGradient.kept[0].numpy(), 1.0)


def test_view_of_a_gradient_the_engine_does_not_own_is_copied():
    _KeepsItsGradient.kept.clear()
    w = ember.randn(3, 2, requires_grad=True)
    _KeepsItsGradient.apply(w.t()).sum().backward()
    assert not _shares(w.grad, _KeepsItsGradient.kept[0])
    w.grad.add_(1)
    np.testing.assert_allclose(_KeepsItsGradient.kept[0].numpy(), 1.0)


def test_hook_on_a_view_node_stops_adoption(adopted):
    w = ember.randn(3, 2, requires_grad=True)
    seen = []
    v = w.t()
    v.register_hook(seen.append)
    (ember.randn(4, 2) @ v).sum().backward()
    assert adopted == [False]
    assert not _shares(w.grad, seen[0])


@pytest.mark.parametrize("op", [
    lambda x: ember.nn.functional.leaky_relu(x, 0.1), ember.nn.functional.elu,
    ember.nn.functional.softplus, ember.nn.functional.glu, lambda x: x.logsumexp(-1),
    ember.abs, ember.nn.functional.hardtanh, ember.nn.functional.mish,
    ember.nn.functional.logsigmoid, ember.nn.functional.hardsigmoid,
    lambda x: ember.nn.functional.softshrink(x, 0.5),
    lambda x: ember.nn.functional.threshold(x, 0.1, 2.0), lambda x: x * 3.0,
    lambda x: x / 3.0, lambda x: x * x.detach().exp(), lambda x: 2.0 / (x * x + 1),
    lambda x: ember.softmax(x, -1), lambda x: ember.log_softmax(x, 0),
    lambda x: ember.softmax(x.reshape(2, 2, -1), 1), lambda x: x.norm(dim=1),
    lambda x: ember.linalg.vector_norm(x, 3.0, 0), lambda x: x.norm(p=1)])
@pytest.mark.parametrize("size", [8, 4096])   # (the NumPy path, and the kernels' where any)
def test_activation_gradients_are_adopted_without_copy(adopted, op, size):
    # these backwards (and mul's and div's) allocate the gradient they return, on either
    # path: a leaf keeps it
    x = ember.randn(4, size, requires_grad=True)
    g = ember.randn(*op(x).shape)
    op(x).backward(g)
    assert adopted == [True]
    assert x.grad._data.flags.writeable and not _shares(x.grad, g)
    (expected,) = ember.autograd.grad(op(x), x, g)
    np.testing.assert_array_equal(x.grad.numpy(), expected.numpy())


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("op", ["group_norm", "rms_norm"])
def test_norm_node_gradients_are_adopted_without_copy(adopted, op, affine):
    # group norm's and rms norm's nodes return arrays made by their backwards: the input,
    # weight and bias each keep theirs, and none shares memory with another or with g
    x = ember.randn(4, 6, 5, requires_grad=True)
    params = [ember.randn(6 if op == "group_norm" else 5, requires_grad=True)
              for _ in range(affine * (2 if op == "group_norm" else 1))]
    F = ember.nn.functional

    def run():
        return F.group_norm(x, 3, *params) if op == "group_norm" else F.rms_norm(
            x, (5,), *params)

    g = ember.randn(4, 6, 5)
    run().backward(g)
    assert adopted == [True] * (1 + len(params))
    leaves = [x] + params
    for i, t in enumerate(leaves):
        assert t.grad._data.flags.writeable and not _shares(t.grad, g)
        assert not any(_shares(t.grad, other.grad) for other in leaves[i + 1:])
    expected = ember.autograd.grad(run(), leaves, g)
    for t, e in zip(leaves, expected):
        np.testing.assert_array_equal(t.grad.numpy(), e.numpy())


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_contiguous_slices_of_an_owned_gradient_are_adopted(adopted, join):
    # cat along dim 0 (and stack's unbind) hands each input a C-contiguous slice of the
    # owned incoming gradient: kept without a copy, as PyTorch keeps them
    a = ember.randn(6, 4, requires_grad=True)
    b = ember.randn(6, 4, requires_grad=True)
    getattr(ember, join)([a, b], 0).sigmoid().sum().backward()
    assert adopted == [True, True]
    assert a.grad._data.base is b.grad._data.base
    s = ember.sigmoid(ember.cat([a, b]).detach())
    np.testing.assert_allclose(np.concatenate([a.grad.numpy(), b.grad.numpy()]).reshape(-1),
                               (s * (1 - s)).numpy().reshape(-1), rtol=1e-6)
    # accumulating into one leaf's slice leaves the other's alone
    before = b.grad.numpy().copy()
    getattr(ember, join)([a, b.detach()], 0).sigmoid().sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), before)
    np.testing.assert_allclose(a.grad.numpy(), 2 * (s * (1 - s)).numpy()[:6], rtol=1e-6)


def test_strided_slices_of_an_owned_gradient_are_copied(adopted):
    # along dim 1 each slice is strided: copied into a C-contiguous .grad
    a = ember.randn(6, 4, requires_grad=True)
    b = ember.randn(6, 4, requires_grad=True)
    ember.cat([a, b], 1).sigmoid().sum().backward()
    assert adopted == [False, False]
    assert a.grad.is_contiguous() and b.grad.is_contiguous()


def test_slices_of_the_callers_gradient_are_copied_by_the_threads(on_two_threads,
                                                                     monkeypatch):
    """cat's backward hands each leaf a slice of the caller's gradient: each .grad is a
    C-contiguous copy of its slice, made by ember's threads when large (ops/_parallel.py
    `copy`), and shares no memory with the caller's array."""
    from ember.ops import _parallel

    dealt = []
    real = _parallel.run_parts
    monkeypatch.setattr(_parallel, "run_parts",
                        lambda fn, parts: dealt.append(len(parts)) or real(fn, parts))
    x = ember.zeros(2048, 512, requires_grad=True)                # 1M elements each
    y = ember.zeros(2048, 512, requires_grad=True)
    g = np.arange(2048 * 1024, dtype=np.float32).reshape(2048, 1024)
    ember.cat([x, y], 1).backward(ember.tensor(g))
    assert dealt.count(2) >= 2
    for leaf, part in ((x, g[:, :512]), (y, g[:, 512:])):
        got = leaf.grad.numpy()
        np.testing.assert_array_equal(got, part)
        assert got.flags.c_contiguous and not np.shares_memory(got, g)


def test_small_gradients_are_copied_on_the_calling_thread(monkeypatch):
    from ember.ops import _parallel

    monkeypatch.setattr(_parallel, "run_parts", lambda fn, parts: pytest.fail("split"))
    x = ember.zeros(3, 4, requires_grad=True)
    g = np.arange(24, dtype=np.float32).reshape(3, 8)
    ember.cat([x, x.detach()], 1).backward(ember.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), g[:, :4])
    assert x.grad.numpy().flags.c_contiguous


def test_another_librarys_gradient_is_copied_by_its_own_copy(monkeypatch):
    """A GPU array (here a stand-in with CuPy's `copy`) never goes through NumPy."""
    from ember.ops import _parallel

    monkeypatch.setattr(_parallel, "threads", lambda: 2)

    class Device:
        shape, ndim, size, strides, itemsize = (4096, 512), 2, 4096 * 512, (4096, 4), 4

        def copy(self):
            return "copied on the device"

    assert _parallel.copy(Device()) == "copied on the device"


def test_sub_hands_its_owned_gradient_to_a_single_input(adopted, monkeypatch):
    # ``x - target`` hands x the incoming gradient itself, and computes no negated copy
    # for a target that needs no gradient
    from ember.ops.arithmetic import Neg

    negated = []
    real = Neg.forward
    monkeypatch.setattr(Neg, "forward", staticmethod(lambda ctx, x: negated.append(1)
                                                     or real(ctx, x)))
    x = ember.randn(5, 3, requires_grad=True)
    target = ember.randn(5, 3)
    (x - target).sigmoid().sum().backward()
    assert adopted == [True] and negated == []
    s = ember.sigmoid(x.detach() - target)
    np.testing.assert_allclose(x.grad.numpy(), (s * (1 - s)).numpy(), rtol=1e-6)


def test_sub_of_two_leaves_hands_on_the_gradient_and_its_negation(adopted):
    a = ember.randn(4, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    (a - b).sigmoid().sum().backward()
    assert adopted == [True, True]
    assert not _shares(a.grad, b.grad)
    s = ember.sigmoid(a.detach() - b.detach()).numpy()
    e = s * (1 - s)
    np.testing.assert_allclose(a.grad.numpy(), e, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), -e, rtol=1e-6)


def test_add_of_two_leaves_copies_the_shared_gradient(adopted):
    # ``a + b`` hands one array to both inputs: neither may own it
    a = ember.randn(4, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    (a + b).sigmoid().sum().backward()
    assert adopted == [False, False]
    assert not _shares(a.grad, b.grad)
    a.grad.add_(1)  # (written in place: b's must not change)
    s = ember.sigmoid(a.detach() + b.detach()).numpy()
    np.testing.assert_allclose(b.grad.numpy(), s * (1 - s), rtol=1e-6)


def test_add_of_a_tensor_and_itself_sums_both_gradients(adopted):
    a = ember.randn(4, requires_grad=True)
    (a + a).exp().sum().backward()
    e = (2 * a.detach()).exp().numpy()
    np.testing.assert_allclose(a.grad.numpy(), 2 * e, rtol=1e-6)


@pytest.mark.parametrize("inplace", [False, True])
def test_add_of_a_constant_hands_on_the_owned_gradient(adopted, inplace):
    x = ember.randn(3, 4, requires_grad=True)
    bias = ember.randn(3, 4)
    y = x.clone().add_(bias) if inplace else x + bias
    y.sigmoid().sum().backward()
    # (clone's node hands on its incoming gradient as a view would: owned either way)
    assert adopted == [True]
    s = ember.sigmoid(x.detach() + bias).numpy()
    np.testing.assert_allclose(x.grad.numpy(), s * (1 - s), rtol=1e-6)


def test_the_callers_gradient_through_add_is_not_aliased(adopted):
    x = ember.randn(4, requires_grad=True)
    g = ember.ones(4)
    (x + 1).backward(g)
    assert adopted == [False]
    assert not _shares(x.grad, g)


def test_gradient_through_sub_is_not_owned_under_create_graph(adopted):
    # (a recorded gradient may be saved by the graph of the backward: the leaf copies it)
    x = ember.randn(4, requires_grad=True)
    ((x - 1) ** 3).sum().backward(create_graph=True)
    assert adopted == [False]
    d = x.detach().numpy() - 1
    np.testing.assert_allclose(x.grad.detach().numpy(), 3 * d * d, rtol=1e-5)
    (g2,) = ember.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(g2.numpy(), 6 * d, rtol=1e-5)


@pytest.mark.parametrize("tensor_bounds", [False, True])
def test_clamp_gradient_is_kept_without_a_copy(adopted, tensor_bounds):
    x = ember.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], requires_grad=True)
    lo, hi = (ember.tensor(-1.0), ember.tensor(1.0)) if tensor_bounds else (-1.0, 1.0)
    x.clamp(lo, hi).sum().backward()
    assert adopted == [True]
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize("op", ["exp", "sqrt", "sin", "atan", "erf", "neg", "maximum", "hypot",
                                "atan2"])
def test_elementwise_gradients_are_kept_without_a_copy(adopted, op):
    # (their backwards make a new array: `_fresh_grads`)
    x = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
    other = ember.tensor([1.0, 0.25, 3.0])
    calls = {"maximum": lambda: ember.maximum(x, other), "hypot": lambda: ember.hypot(x, other),
             "atan2": lambda: ember.atan2(x, other), "neg": lambda: -x}
    y = calls[op]() if op in calls else getattr(x, op)()
    y.sum().backward()
    assert adopted == [True]
    (expected,) = ember.autograd.grad(calls[op]() if op in calls else getattr(x, op)(), x,
                                      ember.ones(3))
    np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), rtol=1e-6)


def test_frac_hands_on_its_owned_gradient(adopted):
    x = ember.tensor([0.5, 1.25, -2.75], requires_grad=True)
    x.frac().sigmoid().sum().backward()
    assert adopted == [True]
    s = ember.sigmoid(x.detach().frac()).numpy()
    np.testing.assert_allclose(x.grad.numpy(), s * (1 - s), rtol=1e-6)


def test_a_retained_or_hooked_gradient_through_add_is_not_aliased():
    x = ember.randn(5, requires_grad=True)
    y = x + 1
    y.retain_grad()
    (y * 2).sum().backward()
    assert not _shares(x.grad, y.grad)
    with ember.no_grad():
        x.grad.add_(1)
    np.testing.assert_array_equal(y.grad.numpy(), 2.0)
    x = ember.randn(5, requires_grad=True)
    seen = []
    y = x - 1
    y.register_hook(seen.append)
    (y * 3).sum().backward()
    assert not _shares(x.grad, seen[0])
    np.testing.assert_array_equal(x.grad.numpy(), 3.0)
