"""Identity, Linear, Bilinear (and F.linear / F.bilinear), Flatten, Unflatten."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck
from ember.testing import assert_close


def test_identity():
    m = nn.Identity(3, unused="x")
    x = ember.ones(2)
    assert m(x) is x and repr(m) == "Identity()"


def test_linear_shapes_params_and_repr():
    m = nn.Linear(4, 3)
    assert m.weight.shape == (3, 4) and m.bias.shape == (3,)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert m(ember.ones(2, 4)).shape == (2, 3)
    assert m(ember.ones(5, 2, 4)).shape == (5, 2, 3)
    assert m(ember.ones(4)).shape == (3,)
    assert repr(m) == "Linear(in_features=4, out_features=3, bias=True)"
    no_bias = nn.Linear(4, 3, bias=False)
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ["weight"]
    assert repr(no_bias) == "Linear(in_features=4, out_features=3, bias=False)"
    assert nn.Linear(2, 2, dtype=ember.float64).weight.dtype is ember.float64


def test_linear_values_and_grads():
    m = nn.Linear(3, 2).double()
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert_close(m(x), x.detach().numpy() @ w.T + b)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, m.weight, m.bias))
    assert gradcheck(lambda x, w: F.linear(x, w), (x, m.weight))
    x3 = ember.randn(2, 2, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x3, m.weight, m.bias))


def test_linear_default_init_bounds():
    ember.manual_seed(0)
    m = nn.Linear(100, 400)
    bound = 1 / math.sqrt(100)  # kaiming_uniform_(a=sqrt(5)) gives the same bound
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.95 * bound  # the range is used (40,000 draws)
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(w.mean()) < 0.02 * bound


def test_linear_init_is_reproducible():
    ember.manual_seed(123)
    a = nn.Linear(5, 5)
    ember.manual_seed(123)
    b = nn.Linear(5, 5)
    assert a.weight.tolist() == b.weight.tolist() and a.bias.tolist() == b.bias.tolist()


def test_linear_shape_error_message():
    m = nn.Linear(9216, 128)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(64x9200 and 9216x128\)"):
        m(ember.zeros(64, 9200))
    with pytest.raises(RuntimeError, match=r"\(6x9200 and 9216x128\)"):
        m(ember.zeros(2, 3, 9200))
    with pytest.raises(RuntimeError, match=r"\(1x9200 and 9216x128\)"):
        m(ember.zeros(9200))


def test_linear_error_messages_match_torch():
    torch = pytest.importorskip("torch")
    cases = [((64, 9200), (128, 9216)), ((2, 3, 9200), (128, 9216)), ((9200,), (128, 9216))]
    for x_shape, w_shape in cases:
        msgs = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as info:
                lib.nn.functional.linear(lib.zeros(*x_shape), lib.zeros(*w_shape))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


def test_linear_matches_torch_values():
    torch = pytest.importorskip("torch")
    ours = nn.Linear(3, 2)
    theirs = torch.nn.Linear(3, 2)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    assert_close(ours(ember.tensor(x)), theirs(torch.tensor(x)).detach().numpy())


def test_bilinear():
    m = nn.Bilinear(3, 4, 5).double()
    assert m.weight.shape == (5, 3, 4) and m.bias.shape == (5,)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)"
    bound = 1 / math.sqrt(3)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    x1 = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    x2 = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    expected = np.einsum("bi,oij,bj->bo", x1.detach().numpy(), m.weight.detach().numpy(),
                         x2.detach().numpy()) + m.bias.detach().numpy()
    assert_close(m(x1, x2), expected)
    assert gradcheck(lambda a, b, w, c: F.bilinear(a, b, w, c), (x1, x2, m.weight, m.bias))
    assert m(ember.randn(7, 2, 3, dtype=ember.float64),
             ember.randn(7, 2, 4, dtype=ember.float64)).shape == (7, 2, 5)
    assert nn.Bilinear(3, 4, 5, bias=False).bias is None


@pytest.mark.parametrize("s1, s2, wshape, bshape, message", [
    ((2, 3), (3, 4), (5, 3, 4), (5,), "input batch dimensions do not match at dim 0: got 2 and 3"),
    ((2, 2), (2, 4), (5, 3, 4), (5,), "input1 size does not match weight size: got 2 but "
                                      "expected 3"),
    ((2, 3), (2, 5), (5, 3, 4), (5,), "input2 size does not match weight size: got 5 but "
                                      "expected 4"),
    ((2, 3), (2, 4), (5, 3, 4), (6,), "bias size does not match weight size: got 6 but "
                                      "expected 5"),
])
def test_bilinear_errors(s1, s2, wshape, bshape, message):
    with pytest.raises(RuntimeError, match="bilinear\\(\\): " + message):
        F.bilinear(ember.zeros(*s1), ember.zeros(*s2), ember.zeros(*wshape), ember.zeros(*bshape))


def test_flatten_unflatten():
    x = ember.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Flatten(-2)(x).shape == (2, 3, 20)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    u = nn.Unflatten(1, (2, 3))
    assert u(ember.zeros(4, 6)).shape == (4, 2, 3)
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(2, 3))"
    assert nn.Unflatten(-1, [2, -1])(ember.zeros(4, 6)).shape == (4, 2, 3)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found "
                                        "element of type float at pos 0"):
        nn.Unflatten(1, (2.0, 3))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found "
                                        "type int"):
        nn.Unflatten(1, 5)
    with pytest.raises(RuntimeError):
        u(ember.zeros(4, 5))


def test_model_repr_matches_torch():
    torch = pytest.importorskip("torch")

    def build(lib):
        n = lib.nn
        return n.Sequential(
            n.Flatten(), n.Linear(12, 8), n.Identity(),
            n.ModuleList([n.Linear(8, 8), n.Linear(8, 8, bias=False)]),
            n.Bilinear(8, 8, 4), n.Unflatten(1, (2, 2)),
        )

    assert repr(build(ember)) == repr(build(torch))


def test_linear_grad_fn_names():
    m = nn.Linear(3, 2)
    x = ember.randn(4, 3, requires_grad=True)
    assert m(x).grad_fn.name() == "AddmmBackward0"
    assert nn.Linear(3, 2, bias=False)(x).grad_fn.name() == "MmBackward0"
    # a contiguous N-D input is folded into one addmm, as in PyTorch; others broadcast
    y = m(ember.randn(2, 4, 3, requires_grad=True))
    assert y.grad_fn.name() == "ViewBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "AddmmBackward0"
    assert m(ember.randn(4, 2, 3).transpose(0, 1)).grad_fn.name() == "AddBackward0"


def test_linear_nd_paths_agree():
    m = nn.Linear(3, 2).double()
    x = ember.randn(4, 5, 3, dtype=ember.float64)
    for inp in (x, x.transpose(0, 1).contiguous().transpose(0, 1)):  # folded / broadcast
        inp = inp.detach().requires_grad_()
        m.zero_grad()
        out = m(inp)
        g = ember.randn(*out.shape, dtype=ember.float64)
        out.backward(g)
        ref = inp.detach().numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy()
        assert_close(out, ref)
        gn = g.numpy()
        assert_close(inp.grad, gn @ m.weight.detach().numpy())
        assert_close(m.weight.grad, gn.reshape(-1, 2).T @ inp.detach().numpy().reshape(-1, 3))
        assert_close(m.bias.grad, gn.reshape(-1, 2).sum(0))


def test_mlp_gradients_match_torch():
    torch = pytest.importorskip("torch")

    def build(lib):
        n = lib.nn
        return n.Sequential(n.Linear(5, 7), n.Flatten(0), n.Unflatten(0, (4, 7)),
                            n.Linear(7, 3)).double()

    ours, theirs = build(ember), build(torch)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((4, 5))
    y = np.random.default_rng(2).standard_normal((4, 3))
    loss = F.mse_loss(ours(ember.tensor(x).tanh()), ember.tensor(y))
    ref = torch.nn.functional.mse_loss(theirs(torch.tensor(x).tanh()), torch.tensor(y))
    loss.backward()
    ref.backward()
    assert_close(loss, ref.item(), check_dtype=False)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, q.grad.numpy(), msg=name)


def test_linear_graph_has_pytorchs_edges():
    """AddmmBackward0 has one edge per tensor (bias, input, weight.t()), as in PyTorch:
    its scalars are not inputs of the graph."""
    m = nn.Linear(3, 2)
    y = m(ember.randn(4, 3))
    fns = y.grad_fn.next_functions
    assert [None if f is None else f.name() for f, _ in fns] == [
        "torch::autograd::AccumulateGrad", None, "TBackward0"]
    assert fns[0][0].variable is m.bias
    assert fns[2][0].next_functions[0][0].variable is m.weight
    y = ember.addmm(ember.randn(2, requires_grad=True), ember.randn(4, 3),
                    ember.randn(3, 2, requires_grad=True), beta=0.5, alpha=2.0)
    assert len(y.grad_fn.next_functions) == 3


def test_linear_graph_edges_match_pytorch():
    torch = pytest.importorskip("torch")
    names = []
    for lib in (ember, torch):
        y = lib.nn.Linear(3, 2)(lib.randn(4, 3))
        names.append([None if f is None else f.name() for f, _ in y.grad_fn.next_functions])
    assert names[0] == names[1]


def test_addmm_node_called_with_positional_scalars_still_differentiates():
    """Traces saved before the scalars became keywords replay the positional form."""
    from ember.ops.linalg import AddProduct
    from ember.ops.shape import T

    b = ember.randn(3, dtype=ember.float64, requires_grad=True)
    x = ember.randn(4, 2, dtype=ember.float64)
    w = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    y = AddProduct.apply(b, x, T.apply(w), "addmm", 0.5, 2.0)
    bd, wd = b.detach().numpy(), w.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), 0.5 * bd + 2.0 * x.numpy() @ wd.T)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2.0 * np.ones((4, 3)).T @ x.numpy())
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 2.0))


def test_a_recorded_linear_equals_addmm_through_apply():
    """`AddProduct.record_linear` (a linear layer's recorded call) gives what the general
    ``AddProduct.apply`` path gives: output, node, saved tensors (through saved-tensor
    hooks too), version checks, gradients of both orders."""
    from ember.ops.linalg import AddProduct
    from ember.ops.shape import T

    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((5, 4))
    w0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(3)

    def run(direct):
        x = ember.tensor(x0, requires_grad=True)
        w, b = ember.tensor(w0, requires_grad=True), ember.tensor(b0, requires_grad=True)
        packed = []

        def pack(t):
            packed.append(tuple(t.shape))
            return t

        with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = (AddProduct.record_linear(b, x, T.apply(w)) if direct else
                 AddProduct.apply(b, x, T.apply(w), kind="addmm", beta=1, alpha=1))
        node = y.grad_fn
        edges = [None if f is None else f.name() for f, _ in node.next_functions]
        (gx,) = ember.autograd.grad((y * y).sum(), x, create_graph=True)
        gx.sum().backward()
        return (y.detach().numpy(), node.name(), edges, packed, gx.detach().numpy(),
                w.grad.numpy(), b.grad.numpy())

    ours, general = run(True), run(False)
    for a, b in zip(ours, general):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    assert ours[1] == "AddmmBackward0" and ours[3] == [(5, 4), (4, 3)]
    # a saved input changed in place is caught, as on the general path
    x = ember.tensor(x0, requires_grad=True)
    w = ember.tensor(w0, requires_grad=True)
    y = AddProduct.record_linear(ember.tensor(b0), x, T.apply(w))
    with ember.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_recorded_linear_under_the_profiler_is_the_usual_op():
    m = nn.Linear(4, 3)
    with ember.profiler.profile() as prof:
        m(ember.randn(2, 4)).sum().backward()
    names = [e.name for e in prof.events()]
    # the op is seen through `Function.apply`'s observer: forward and backward events
    assert ["t", "add_product"] == [n for n in names if n in ("t", "add_product")][:2]
    assert "AddmmBackward0" in names and "TBackward0" in names
