"""Tests of the creation functions: dtype inference of tensor/full, ranges (arange,
linspace, logspace, range), eye, triangle indices, meshgrid, cartesian_prod, and the
in-place fill_/zero_; parity with PyTorch where it is installed."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


# Each case runs on ember and on torch (the module is passed in as `m`); results are
# compared by dtype name, shape, values and requires_grad, or by exception type.
PARITY = {
    # dtype inference
    "full bool": lambda m: m.full((2,), True),
    "full int": lambda m: m.full((2,), 2),
    "full float": lambda m: m.full((2,), 2.0),
    "full complex": lambda m: m.full((2,), 2 + 1j),
    "full np float64": lambda m: m.full((2,), np.float64(2)),
    "full np int32": lambda m: m.full((2,), np.int32(2)),
    "full np bool": lambda m: m.full((2,), np.bool_(True)),
    "full int size": lambda m: m.full(2, 1.0),
    "full 0-dim": lambda m: m.full([], 1.0),
    "full tensor value": lambda m: m.full((2,), m.tensor(3)),
    "full nan into int": lambda m: m.full((2,), float("nan"), dtype=m.int64),
    "tensor np float64": lambda m: m.tensor(np.float64(1)),
    "tensor np int32": lambda m: m.tensor(np.int32(1)),
    "tensor [np float64, 2]": lambda m: m.tensor([np.float64(1), 2]),
    "tensor [np int32, 2]": lambda m: m.tensor([np.int32(1), 2]),
    "tensor [1, 2.5]": lambda m: m.tensor([1, 2.5]),
    "tensor [True, 2]": lambda m: m.tensor([True, 2]),
    "tensor []": lambda m: m.tensor([]),
    "tensor [[], []]": lambda m: m.tensor([[], []]),
    "tensor complex": lambda m: m.tensor([1, 2 + 1j]),
    "tensor of tensors": lambda m: m.tensor([m.tensor(1), 2.5]),
    "tensor ragged": lambda m: m.tensor([[1, 2], [3]]),
    "tensor str": lambda m: m.tensor("a"),
    "tensor float16 array": lambda m: m.tensor(np.array([1, 2], dtype=np.float16)),
    "tensor too big": lambda m: m.tensor(2 ** 63),
    "tensor range": lambda m: m.tensor(range(3)),
    "tensor None": lambda m: m.tensor(None),
    # arange
    "arange 5": lambda m: m.arange(5),
    "arange 1..4": lambda m: m.arange(1, 4),
    "arange half steps": lambda m: m.arange(1, 4, 0.5),
    "arange float end": lambda m: m.arange(1.0, 4),
    "arange 0.1": lambda m: m.arange(0, 1, 0.1),
    "arange 0.1 f64": lambda m: m.arange(0, 1, 0.1, dtype=m.float64),
    "arange negative step": lambda m: m.arange(0, -3, -1),
    "arange -0.3": lambda m: m.arange(1, 0, -0.3),
    "arange wrong sign": lambda m: m.arange(0, 3, -1),
    "arange step 0": lambda m: m.arange(0, 3, 0),
    "arange tensor end": lambda m: m.arange(m.tensor(5)),
    "arange float tensor": lambda m: m.arange(m.tensor(5.0)),
    "arange int dtype trunc": lambda m: m.arange(-1.5, 2, 1, dtype=m.int64),
    "arange int dtype step 0": lambda m: m.arange(1, 2.5, 0.5, dtype=m.int64),
    "arange empty": lambda m: m.arange(0.5, dtype=m.int64),
    "arange inf": lambda m: m.arange(float("inf")),
    "arange big ints": lambda m: m.arange(10 ** 18, 10 ** 18 + 3),
    "arange int32": lambda m: m.arange(0, 10, 3, dtype=m.int32),
    "arange requires_grad": lambda m: m.arange(5.0, requires_grad=True),
    "arange int requires_grad": lambda m: m.arange(5, requires_grad=True),
    "range": lambda m: m.range(1, 4),
    "range 0.3": lambda m: m.range(0, 1, 0.3),
    "range int": lambda m: m.range(0, 4, dtype=m.int64),
    # linspace / logspace
    "linspace": lambda m: m.linspace(0, 1, 5),
    "linspace int": lambda m: m.linspace(0, 10, 5, dtype=m.int64),
    "linspace one": lambda m: m.linspace(0, 1, 1),
    "linspace zero": lambda m: m.linspace(0, 1, 0),
    "linspace negative": lambda m: m.linspace(0, 1, -1),
    "linspace tensors": lambda m: m.linspace(m.tensor(0), m.tensor(1), 3),
    "linspace symmetric rounding": lambda m: m.linspace(-1, 1, 6),
    "linspace complex": lambda m: m.linspace(1 + 1j, 2, 3),
    "linspace f64": lambda m: m.linspace(-3.3, 10.1, 7, dtype=m.float64),
    "logspace": lambda m: m.logspace(0, 2, 3),
    "logspace base 2": lambda m: m.logspace(0, 2, 3, base=2),
    "logspace int": lambda m: m.logspace(0, 2, 3, dtype=m.int64),
    "logspace negative": lambda m: m.logspace(-2, 2, 5, dtype=m.float64),
    # eye and triangles
    "eye": lambda m: m.eye(3),
    "eye 2x3": lambda m: m.eye(2, 3),
    "eye negative": lambda m: m.eye(-1),
    "eye m negative": lambda m: m.eye(2, -1),
    "eye bool": lambda m: m.eye(2, dtype=m.bool),
    "eye requires_grad": lambda m: m.eye(2, requires_grad=True),
    "tril_indices": lambda m: m.tril_indices(3, 3),
    "tril_indices offset": lambda m: m.tril_indices(3, 4, 1),
    "triu_indices": lambda m: m.triu_indices(3, 3),
    "triu_indices offset": lambda m: m.triu_indices(4, 3, -1),
    "tril_indices int32": lambda m: m.tril_indices(3, 3, dtype=m.int32),
    "tril_indices empty": lambda m: m.tril_indices(0, 3),
    "tril_indices negative": lambda m: m.tril_indices(-1, 3),
    "triu_indices far offset": lambda m: m.triu_indices(3, 3, 5),
    # grids
    "meshgrid ij": lambda m: m.meshgrid(m.arange(3), m.arange(2), indexing="ij"),
    "meshgrid xy": lambda m: m.meshgrid(m.arange(3), m.arange(2), indexing="xy"),
    "meshgrid xy 3": lambda m: m.meshgrid(m.arange(3), m.arange(2), m.arange(4),
                                          indexing="xy"),
    "meshgrid 0-dim": lambda m: m.meshgrid([m.arange(3), m.tensor(5)], indexing="ij"),
    "meshgrid dtypes": lambda m: m.meshgrid(m.arange(3), m.arange(2.0), indexing="ij"),
    "meshgrid indexing": lambda m: m.meshgrid(m.arange(3), indexing="ab"),
    "cartesian_prod": lambda m: m.cartesian_prod(m.arange(2), m.arange(3)),
    "cartesian_prod one": lambda m: m.cartesian_prod(m.arange(2)),
    "cartesian_prod three": lambda m: m.cartesian_prod(m.arange(2), m.arange(2), m.arange(2)),
    # fill_ / zero_
    "fill_": lambda m: m.zeros(3).fill_(2.5),
    "fill_ int truncates": lambda m: m.zeros(2, dtype=m.long).fill_(2.7),
    "fill_ bool": lambda m: m.zeros(2, dtype=m.bool).fill_(2),
    "fill_ tensor": lambda m: m.zeros(2).fill_(m.tensor(3)),
    "fill_ 1-dim tensor": lambda m: m.zeros(2).fill_(m.ones(2)),
    "fill_ nan into int": lambda m: m.ones(2, dtype=m.long).fill_(float("nan")),
    "fill_ leaf": lambda m: m.zeros(2, requires_grad=True).fill_(1),
    "zero_": lambda m: m.ones(3).zero_(),
    "zero_ leaf": lambda m: m.zeros(2, requires_grad=True).zero_(),
}


def _summary(result):
    if isinstance(result, (tuple, list)):
        return tuple(_summary(r) for r in result)
    dtype = str(result.dtype).split(".")[-1]
    return dtype, tuple(result.shape), result.tolist(), result.requires_grad


def _run(fn, module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _summary(fn(module))
        except Exception as exc:  # noqa: BLE001 - the exception type is what is compared
            return type(exc).__name__


@needs_torch
@pytest.mark.parametrize("name", list(PARITY))
def test_parity_with_torch(name):
    ours, theirs = _run(PARITY[name], ember), _run(PARITY[name], torch)
    if isinstance(theirs, str) or isinstance(ours, str):
        assert ours == theirs
        return
    _assert_same(ours, theirs)


def _assert_same(ours, theirs):
    if isinstance(ours[0], tuple):
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
        return
    assert ours[0] == theirs[0] and ours[1] == theirs[1] and ours[3] == theirs[3]
    np.testing.assert_allclose(np.asarray(ours[2], dtype=complex),
                               np.asarray(theirs[2], dtype=complex), rtol=1e-6, atol=1e-7)


def test_arange_length_rule_and_values():
    assert ember.arange(0, 1, 0.1).shape == (10,)
    assert ember.arange(1, 2.5, 0.5).tolist() == [1.0, 1.5, 2.0]
    assert ember.arange(10).dtype is ember.int64
    assert ember.arange(10.0).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.arange(1.0).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        ember.arange(3, 0)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 3, 0)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        assert ember.range(0, 2).tolist() == [0.0, 1.0, 2.0]


def test_linspace_logspace_eye():
    assert_close(ember.linspace(-1, 1, 5), [-1.0, -0.5, 0.0, 0.5, 1.0])
    assert ember.linspace(0, 1, 3, dtype=ember.float64).dtype is ember.float64
    assert_close(ember.logspace(0, 3, 4), [1.0, 10.0, 100.0, 1000.0])
    assert ember.logspace(0, 2, 3, dtype=ember.int64).tolist() == [1, 10, 100]
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -2)
    assert ember.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert ember.eye(3, dtype=ember.int64).dtype is ember.int64
    assert ember.eye(2, requires_grad=True).requires_grad


def test_triangle_indices_index_the_triangle():
    rows, cols = ember.tril_indices(4, 5, -1).tolist()
    assert all(c <= r - 1 for r, c in zip(rows, cols))
    assert len(rows) == np.tril(np.ones((4, 5)), -1).sum()
    rows, cols = ember.triu_indices(4, 5, 1).tolist()
    assert all(c >= r + 1 for r, c in zip(rows, cols))
    assert len(rows) == np.triu(np.ones((4, 5)), 1).sum()
    assert ember.triu_indices(3, 3, dtype=ember.int32).dtype is ember.int32


def test_meshgrid_outputs_are_views_with_gradients():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ember.tensor([10.0, 20.0], requires_grad=True)
    gx, gy = ember.meshgrid(x, y, indexing="ij")
    assert gx.shape == gy.shape == (3, 2)
    assert gx.grad_fn.name() == "ExpandBackward0"
    (gx * gy).sum().backward()
    assert_close(x.grad, [30.0] * 3)
    assert_close(y.grad, [6.0] * 2)
    base = ember.arange(3.0)
    grid, _ = ember.meshgrid(base, ember.arange(2.0), indexing="xy")
    assert np.shares_memory(grid.cpu_array(), base.cpu_array())
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(ember.arange(2), ember.arange(2))
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        ember.meshgrid(ember.ones(2, 2), indexing="ij")


def test_cartesian_prod_rows():
    out = ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4, 5]))
    assert out.tolist() == [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]]


def test_fill_and_zero_in_place():
    t = ember.ones(2, 3)
    version = t._version.value
    assert t.fill_(7).tolist() == [[7.0] * 3] * 2
    assert t._version.value == version + 1
    assert t.zero_() is t and t._version.value == version + 2
    assert t.tolist() == [[0.0] * 3] * 2
    # a view: the base sees the write
    base = ember.ones(2, 3)
    base.transpose(0, 1).fill_(4.0)
    assert base.tolist() == [[4.0] * 3] * 2
    # on a leaf that requires grad: refused; under no_grad: allowed
    leaf = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.fill_(1.0)
    with ember.no_grad():
        leaf.zero_()
    assert leaf.tolist() == [0.0, 0.0, 0.0]
    # through the graph: the overwritten part gets no gradient, a tensor value gets the sum
    x = ember.ones(4, dtype=ember.float64, requires_grad=True)
    v = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    y = x * 3
    y[:2].fill_(v)
    assert y.grad_fn.name() == "CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 3.0]
    assert v.grad.item() == 2.0
    z = x * 1
    assert z.fill_(1.0).grad_fn.name() == "FillBackward2"
    assert z.zero_().grad_fn.name() == "ZeroBackward0"
    with pytest.raises(TypeError):
        ember.zeros(2).fill_("a")


def test_full_and_tensor_inference_without_torch():
    assert ember.full((2,), 2).dtype is ember.int64
    assert ember.full((2,), 2.0).dtype is ember.float32
    assert ember.full((2,), True).dtype is ember.bool
    assert ember.tensor(np.float64(1.5)).dtype is ember.float64
    assert ember.tensor([np.float32(1.0), 2]).dtype is ember.float32
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t"):
        ember.full((2,), math.inf, dtype=ember.int64)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        ember.tensor(ember.ones(2))
