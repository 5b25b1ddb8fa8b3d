"""Views, in-place writes and autograd together (PyTorch's view tracking).

Each scenario is written once against a module (`ember`, or `torch` for the parity
check) and returns the gradients as NumPy arrays.  The values are asserted against
hand-derived ones, so the tests run without PyTorch; with PyTorch installed they
are also compared to it.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, size=(3, 4))
W = RNG.uniform(-2, 2, size=(4,))
C = RNG.uniform(-2, 2, size=(3, 4))


def leaf(lib, a):
    return lib.tensor(a, dtype=lib.float64, requires_grad=True)


def const(lib, a):
    return lib.tensor(a, dtype=lib.float64)


def as_numpy(t):
    return np.array(t.detach().tolist(), dtype=np.float64)


def check(scenario, expected):
    """Run `scenario` on ember, compare to `expected` and (when available) to PyTorch."""
    got = scenario(ember)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    if torch is not None:
        for g, t in zip(got, scenario(torch)):
            np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------
# gradients through in-place writes into views


def test_setitem_row_of_non_leaf():
    def scenario(lib):
        x, w = leaf(lib, X), leaf(lib, W)
        y = x * 1
        y[0] = w * 2
        (y * const(lib, C)).sum().backward()
        return as_numpy(x.grad), as_numpy(w.grad)

    gx = C.copy()
    gx[0] = 0
    check(scenario, [gx, 2 * C[0]])


def test_inplace_mul_on_column_view_of_clone():
    def scenario(lib):
        x = leaf(lib, X)
        y = x.clone()
        y[:, 1].mul_(3)
        (y * const(lib, C)).sum().backward()
        return (as_numpy(x.grad),)

    gx = C.copy()
    gx[:, 1] *= 3
    check(scenario, [gx])


def test_base_without_grad_joins_the_graph():
    def scenario(lib):
        w = leaf(lib, W[:2])
        b = lib.zeros(3, dtype=lib.float64)
        b[1:] = w
        assert b.requires_grad and not b.is_leaf
        (b * const(lib, C[0, :3])).sum().backward()
        return (as_numpy(w.grad),)

    check(scenario, [C[0, 1:3]])
    b = ember.zeros(3, dtype=ember.float64)
    b[1:] = leaf(ember, W[:2])
    assert b.grad_fn.name() == "CopySlices"


def test_inplace_on_transpose_then_other_view_of_same_base():
    def scenario(lib):
        x = leaf(lib, X)
        y = x * 1
        row = y[1]            # a view taken before the write
        yt = y.t()
        yt[0].mul_(5)         # scales column 0 of y, so also row[0]
        loss = (row * const(lib, W)).sum() + (y * const(lib, C)).sum()
        loss.backward()
        return as_numpy(x.grad), as_numpy(row.detach())

    gx = C.copy()
    gx[1] += W
    gx[:, 0] *= 5
    row = X[1].copy()
    row[0] *= 5
    check(scenario, [gx, row])


def test_inplace_through_unsqueeze_of_non_leaf():
    def scenario(lib):
        x = leaf(lib, X)
        y = x * 2
        y.unsqueeze(0).add_(1)
        (y * y).sum().backward()
        return as_numpy(x.grad), as_numpy(y.detach())

    y = X * 2 + 1
    check(scenario, [4 * y, y])


def test_view_chain_write_and_grad_of_the_view():
    def scenario(lib):
        x = leaf(lib, X)
        y = x * 1
        v = y[1:, ::2]        # a slice of a slice below
        v[0].mul_(-1)
        v.sum().backward()
        return (as_numpy(x.grad),)

    gx = np.zeros_like(X)
    gx[1:, ::2] = 1
    gx[1, ::2] = -1
    check(scenario, [gx])


def test_write_into_view_after_it_was_used():
    """A value used before an in-place write keeps its old gradient path."""
    def scenario(lib):
        x = leaf(lib, X)
        y = x * 1
        first = y[0] + 0      # uses the old row 0 (add saves nothing)
        y[0].mul_(0)
        (first.sum() + (y * const(lib, C)).sum()).backward()
        return (as_numpy(x.grad),)

    gx = C.copy()
    gx[0] = 1
    check(scenario, [gx])


def test_write_to_base_then_to_an_older_view():
    def scenario(lib):
        x = leaf(lib, X)
        y = x * 1
        v = y[0]
        y.mul_(2)
        v.add_(y[1].detach())  # v was made before the write to y
        (y * const(lib, C)).sum().backward()
        return as_numpy(x.grad), as_numpy(y.detach())

    y = 2 * X
    y[0] += y[1]
    check(scenario, [2 * C, y])


def test_inplace_on_view_reading_another_view_of_the_same_base():
    def scenario(lib):
        x = leaf(lib, X)
        y = x * x
        y[0].add_(y[1] + y[2])
        y[2].sub_(y[0])
        loss = (y * const(lib, C)).sum()
        loss.backward(retain_graph=True)
        first = as_numpy(x.grad)
        loss.backward()       # the graph through CopySlices can run twice
        return first, as_numpy(x.grad)

    # y0 = x0² + x1² + x2², y1 = x1², y2 = x2² - y0 = -x0² - x1²
    c0, c1, c2 = C
    g = np.empty_like(X)
    g[0] = 2 * X[0] * (c0 - c2)
    g[1] = 2 * X[1] * (c0 + c1 - c2)
    g[2] = 2 * X[2] * c0
    check(scenario, [g, 2 * g])


def test_saved_operand_sharing_the_written_memory_is_refused():
    """An in-place op saving another view of its target's base: backward refuses it, as
    PyTorch does (the operand may overlap the written region)."""
    for m in (ember, torch) if torch is not None else (ember,):
        x = leaf(m, X)
        y = x * 1
        y[:, 1:3].mul_(y[:, 0:2])  # overlapping: the old values are gone
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            y.sum().backward()


def test_inplace_on_output_of_multi_view_op():
    """PyTorch refuses this; ember allows it and the gradient is still exact."""
    x = leaf(ember, X)
    y = x * 1
    top, bottom = y.split([1, 2])
    bottom.mul_(3)
    (y * const(ember, C)).sum().backward()
    gx = C.copy()
    gx[1:] *= 3
    np.testing.assert_allclose(as_numpy(x.grad), gx)


def test_augmented_assignment_through_indexing():
    def scenario(lib):
        x, w = leaf(lib, X), leaf(lib, W)
        y = x * 1
        y[0] += w             # a view: add_ in place, then copied onto itself
        y[[0, 2]] *= 2        # advanced: a copy multiplied, then index_put_
        y[:, 2:] -= y[:, :2].detach()
        (y * const(lib, C)).sum().backward()
        return as_numpy(x.grad), as_numpy(w.grad), as_numpy(y.detach())

    y = X.copy()
    y[0] += W
    y[[0, 2]] *= 2
    y[:, 2:] -= y[:, :2]
    gx = C.copy()
    gx[[0, 2]] *= 2
    check(scenario, [gx, 2 * C[0], y])


def test_double_backward_through_copy_slices():
    def scenario(lib):
        x, w = leaf(lib, X), leaf(lib, W)
        y = x * x
        y[1] = w * w * w
        loss = (y * const(lib, C)).sum()
        gx, gw = lib.autograd.grad(loss, (x, w), create_graph=True)
        (gx.sum() + gw.sum()).backward()
        return as_numpy(gx), as_numpy(gw), as_numpy(x.grad), as_numpy(w.grad)

    gx = 2 * X * C
    gx[1] = 0
    gw = 3 * W * W * C[1]
    ggx = 2 * C.copy()
    ggx[1] = 0
    ggw = 6 * W * C[1]
    check(scenario, [gx, gw, ggx, ggw])


def test_setitem_with_advanced_index_on_non_leaf():
    def scenario(lib):
        x, w = leaf(lib, X), leaf(lib, W[:2])
        y = x * 1
        y[[0, 2], 1] = w
        y[y.detach() > 1.5] = 0.0
        (y * const(lib, C)).sum().backward()
        return as_numpy(x.grad), as_numpy(w.grad)

    y = X.copy()
    y[[0, 2], 1] = W[:2]
    big = y > 1.5
    gx = C.copy()
    gx[[0, 2], 1] = 0
    gx[big] = 0
    gw = C[[0, 2], 1] * ~big[[0, 2], 1]
    check(scenario, [gx, gw])


def test_setitem_on_view_of_a_view_with_advanced_index():
    def scenario(lib):
        x, w = leaf(lib, X), leaf(lib, W[:2])
        y = x * 1
        y[1, [0, 3]] = w      # int -> a view; then index_put_ into it
        (y * const(lib, C)).sum().backward()
        return as_numpy(x.grad), as_numpy(w.grad)

    gx = C.copy()
    gx[1, [0, 3]] = 0
    check(scenario, [gx, C[1, [0, 3]]])


# ----------------------------------------------------------------------
# errors


def test_inplace_on_view_of_leaf_is_refused():
    x = ember.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        x.t().mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        x.unsqueeze(0).add_(1)


def test_inplace_on_leaf_is_refused():
    x = ember.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation."):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[ember.tensor([0, 1])] = 0.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.masked_fill_(x.detach() > 0, 0.0)
    with ember.no_grad():
        x[0] = 1.0  # allowed without recording
    assert x[0].tolist() == [1.0] * 4


def test_saved_tensor_modified_in_place():
    x = ember.tensor(X, requires_grad=True)
    y = x * 1
    z = y * y                 # saves y
    y[0].add_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        z.sum().backward()


def test_saved_tensor_modified_through_another_view():
    x = ember.tensor(X, requires_grad=True)
    y = x * 1
    v = y[1]
    z = v * v                 # saves the view (version 0)
    y.t()[0].mul_(0)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        z.sum().backward()


def test_gather_saves_nothing_that_a_write_breaks():
    x = ember.tensor(X, requires_grad=True)
    y = x * 1
    g = y.gather(1, ember.tensor([[0], [1], [2]]))
    y.add_(1)                 # gather's gradient needs no value of y
    g.sum().backward()
    assert x.grad.sum().item() == 3


# ----------------------------------------------------------------------
# version counters and memory sharing


VIEWS = {
    "view": lambda t: t.view(12),
    "reshape": lambda t: t.reshape(2, 6),
    "flatten": lambda t: t.flatten(),
    "squeeze": lambda t: t.unsqueeze(0).squeeze(0),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.permute(1, 0),
    "t": lambda t: t.t(),
    "T": lambda t: t.T,
    "mT": lambda t: t.mT,
    "expand": lambda t: t.unsqueeze(0).expand(2, 3, 4),
    "broadcast_to": lambda t: t.broadcast_to((2, 3, 4)),
    "narrow": lambda t: t.narrow(1, 1, 2),
    "select": lambda t: t.select(0, 1),
    "unbind": lambda t: t.unbind(1)[2],
    "split": lambda t: t.split(2, 1)[1],
    "chunk": lambda t: t.chunk(3, 0)[2],
    "diagonal": lambda t: t.diagonal(1),
    "movedim": lambda t: t.movedim(0, 1),
    "unflatten": lambda t: t.unflatten(1, (2, 2)),
    "slice": lambda t: t[1:3, ::2],
    "ellipsis_none": lambda t: t[..., None, 1],
    "int": lambda t: t[0],
    "unfold": lambda t: t.unfold(1, 2, 1),
    "as_strided": lambda t: t.as_strided((2, 2), (4, 1), 1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_memory_and_version(name):
    base = ember.tensor(X.copy())
    view = VIEWS[name](base)
    assert view._version is base._version
    before = base._version.value
    base.add_(1)
    assert view._version.value == before + 1
    expected = VIEWS[name](ember.tensor(X + 1))
    np.testing.assert_allclose(view.tolist(), expected.tolist())


@pytest.mark.parametrize("name", ["view", "transpose", "narrow", "select", "diagonal", "slice",
                                  "int", "unbind", "unflatten"])
def test_writes_through_views_reach_the_base(name):
    base = ember.tensor(X.copy())
    view = VIEWS[name](base)
    before = base._version.value
    view.mul_(0)
    assert base._version.value == before + 1
    expected = X.copy()
    mask = ember.tensor(np.zeros_like(X))
    VIEWS[name](mask).add_(1)
    expected[np.asarray(mask.tolist()) > 0] = 0
    np.testing.assert_allclose(base.tolist(), expected)


def test_advanced_indexing_copies():
    base = ember.tensor(X.copy())
    picked = base[[0, 1]]
    assert picked._version is not base._version
    picked.mul_(0)
    np.testing.assert_allclose(base.tolist(), X)


def test_reshape_that_copies_is_not_a_view():
    base = ember.tensor(X.copy())
    flat = base.t().reshape(-1)
    assert flat._version is not base._version
    assert flat.grad_fn is None


def test_version_counter_counts_setitem():
    x = ember.zeros(3, 4)
    assert x._version.value == 0
    x[0] = 1.0
    x[:, 1] = ember.ones(3)
    x[ember.tensor([0, 2])] = 2.0
    assert x._version.value == 3
    if torch is not None:
        t = torch.zeros(3, 4)
        t[0] = 1.0
        t[:, 1] = torch.ones(3)
        t[torch.tensor([0, 2])] = 2.0
        assert t._version == 3
        np.testing.assert_allclose(x.tolist(), t.tolist())


def test_view_grad_fn_is_refreshed_after_write_to_base():
    x = ember.tensor(X, requires_grad=True)
    y = x * 1
    v = y[0]
    assert v.grad_fn.name() == "SelectBackward0"
    y.mul_(2)
    fn = v.grad_fn
    assert fn.name() == "SelectBackward0"
    assert fn.next_functions[0][0] is y.grad_fn
    assert y.grad_fn.name() == "MulBackward0"
