"""Shape ops beyond the op table: options, errors, views, edge cases, PyTorch parity."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(1)
A = RNG.uniform(-2, 2, size=(2, 3, 4))


def arr(t):
    return np.asarray(t.detach().cpu_array())


def raises_like_torch(fn, exc, match):
    """`fn(lib)` raises `exc` matching `match` in ember, and the same type in PyTorch."""
    with pytest.raises(exc, match=match):
        fn(ember)
    if torch is not None:
        with pytest.raises(exc):
            fn(torch)


# ----------------------------------------------------------------------
# errors (type and message as PyTorch's)

ERRORS = [
    (lambda m: m.cat([m.zeros(2, 3), m.zeros(3, 3)], 1), RuntimeError,
     r"Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for "
     r"tensor number 1 in the list."),
    (lambda m: m.cat([m.zeros(2), m.zeros(2, 3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 1 and 2"),
    (lambda m: m.cat([m.zeros(()), m.zeros(())]), RuntimeError,
     r"zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    (lambda m: m.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (lambda m: m.cat([m.zeros(2, 3)], 2), IndexError, "Dimension out of range"),
    (lambda m: m.stack([m.zeros(2), m.zeros(3)]), RuntimeError,
     r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and \[3\] at "
     "entry 1"),
    (lambda m: m.zeros(2, 3, 4).t(), RuntimeError,
     r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda m: m.zeros(3).mT, RuntimeError, "tensor.mT is only supported on matrices"),
    (lambda m: m.zeros(3).H, RuntimeError, "tensor.H is only supported on matrices"),
    (lambda m: m.zeros(3, 1).squeeze((0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda m: m.zeros(3).squeeze(2), IndexError, "Dimension out of range"),
    (lambda m: m.zeros(3).unsqueeze(2), IndexError, "Dimension out of range"),
    (lambda m: m.zeros(3, 4).unflatten(1, (3, -1)), RuntimeError,
     r"unflatten: Provided sizes \[3, -1\] don't multiply up to the size of dim 1 \(4\)"),
    (lambda m: m.zeros(3, 4).flatten(1, 0), RuntimeError,
     "flatten\\(\\) has invalid args: start_dim cannot come after end_dim"),
    (lambda m: m.zeros(2, 3).movedim((0, 1), (1,)), RuntimeError,
     "movedim: Invalid source or destination dims"),
    (lambda m: m.zeros(2, 3).movedim((0, 0), (1, 0)), RuntimeError,
     r"movedim: repeated dim in `source` \(\[0, 0\]\)"),
    (lambda m: m.zeros(3, 4).split([1, 1], 0), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3"),
    (lambda m: m.zeros(3, 4).split(0), RuntimeError,
     "split_size can only be 0 if dimension size is 0"),
    (lambda m: m.zeros(5).chunk(0), RuntimeError,
     "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda m: m.zeros(3).tensor_split(0), RuntimeError,
     "number of sections must be larger than 0, got 0"),
    (lambda m: m.zeros(5).narrow(0, 3, 3), RuntimeError,
     r"start \(3\) \+ length \(3\) exceeds dimension size \(5\)."),
    (lambda m: m.zeros(3).narrow(0, -4, 1), IndexError,
     r"start out of range \(expected to be in range of \[-3, 3\], but got -4\)"),
    (lambda m: m.zeros(5).select(0, 7), IndexError,
     r"select\(\): index 7 out of range for tensor of size \[5\] at dimension 0"),
    (lambda m: m.zeros(2, 3).unfold(1, 4, 1), RuntimeError,
     "maximum size for tensor at dimension 1 is 3 but size is 4"),
    (lambda m: m.zeros(2, 3).unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda m: m.zeros(2, 3).diagonal(0, 0, 0), RuntimeError,
     "diagonal dimensions cannot be identical 0, 0"),
    (lambda m: m.zeros(3, 4).rot90(1, (0, 0)), RuntimeError,
     "expected rotation dims to be different"),
    (lambda m: m.zeros(3, 4).rot90(1, (0,)), RuntimeError,
     "expected total rotation dims == 2, but got dims = 1"),
    (lambda m: m.zeros(3).roll(1, (0, 0)), RuntimeError,
     "shifts and dimensions must align. shifts: 1, dims:2"),
    (lambda m: m.zeros(3).flip((0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda m: m.zeros(3).fliplr(), RuntimeError, "Input must be >= 2-d."),
    (lambda m: m.zeros(3).tril(), RuntimeError,
     "tril: input tensor must have at least 2 dimensions"),
    (lambda m: m.zeros(2, 3, 4).diag(), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. "
     "Got 3D"),
    (lambda m: m.zeros(3, 4).repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions"),
    (lambda m: m.zeros(3).repeat_interleave(m.tensor([1, 2])), RuntimeError,
     "repeats must have the same size as input along dim"),
    (lambda m: m.zeros(3, 1).expand(3, 4, 2), RuntimeError,
     r"The expanded size of the tensor \(4\) must match the existing size \(3\)"),
    (lambda m: m.broadcast_shapes((2, 1), (3, 2)), RuntimeError,
     "Attempting to broadcast a dimension of length 3"),
    (lambda m: m.zeros(3, 4).view(5, -1), RuntimeError,
     r"shape '\[5, -1\]' is invalid for input of size 12"),
    (lambda m: m.zeros(3, 4).t().view(12), RuntimeError, "view size is not compatible"),
    (lambda m: m.zeros(3).unbind(1), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_pytorch(case):
    fn, exc, match = ERRORS[case]
    raises_like_torch(fn, exc, match)


# ----------------------------------------------------------------------
# values and options against PyTorch

PARITY = {
    "flatten_mid": lambda m, a: a.flatten(1, 2),
    "flatten_neg": lambda m, a: m.flatten(a, -2),
    "unflatten": lambda m, a: a.unflatten(-1, (2, 2)),
    "squeeze_none": lambda m, a: a[:, :1, None].squeeze(),
    "squeeze_tuple": lambda m, a: a[:1, :, None].squeeze((0, 2, 3)),
    "swapdims": lambda m, a: m.swapdims(a, 0, 2),
    "moveaxis": lambda m, a: m.moveaxis(a, -1, 0),
    "movedim_tuple": lambda m, a: a.movedim((0, 2), (2, 1)),
    "T": lambda m, a: a[0].T,
    "mT": lambda m, a: a.mT,
    "mH": lambda m, a: a.mH,
    "adjoint": lambda m, a: a.adjoint(),
    "broadcast_to": lambda m, a: a[:, :1].broadcast_to((3, 2, 5, 4)),
    "atleast_1d": lambda m, a: m.atleast_1d(a[0, 0, 0]),
    "narrow_tensor_start": lambda m, a: a.narrow(2, m.tensor(1), 2),
    "select_neg": lambda m, a: a.select(-1, -2),
    "diagonal": lambda m, a: a.diagonal(2, 1, 2),
    "diagonal_neg": lambda m, a: a.diagonal(-2, 2, 1),
    "diagonal_out_of_range": lambda m, a: a.diagonal(5),
    "diag_embed": lambda m, a: m.diag_embed(a, -1, 0, 2),
    "diag": lambda m, a: m.diag(a[0], 2),
    "diag_vector": lambda m, a: m.diag(a[0, 0], -2),
    "unfold": lambda m, a: a.unfold(2, 3, 1),
    "unfold_0d": lambda m, a: a[0, 0, 0].unfold(0, 1, 1),
    "repeat": lambda m, a: a[0].repeat(2, 1, 2),
    "tile": lambda m, a: m.tile(a, (2, 1)),
    "repeat_interleave": lambda m, a: a.repeat_interleave(2, dim=-1),
    "repeat_interleave_tensor": lambda m, a: a.repeat_interleave(m.tensor([2, 0, 1]), dim=1),
    "flip": lambda m, a: a.flip(-1),
    "roll": lambda m, a: a.roll(-5),
    "roll_dims": lambda m, a: m.roll(a, (1, 2), (0, 2)),
    "rot90": lambda m, a: a.rot90(2, (2, 1)),
    "rot90_neg": lambda m, a: a.rot90(-3),
    "tril": lambda m, a: a.tril(-1),
    "triu": lambda m, a: a.triu(2),
    "hstack": lambda m, a: m.hstack([a, a]),
    "vstack": lambda m, a: m.vstack([a[0], a[1, :1]]),
    "row_stack": lambda m, a: m.row_stack([a[0, 0], a[1, 0]]),
    "dstack": lambda m, a: m.dstack([a[0], a[1]]),
    "column_stack": lambda m, a: m.column_stack([a[0, 0], a[1].T]),
    "concat": lambda m, a: m.concat((a, a), -1),
    "concatenate": lambda m, a: m.concatenate((a, a), axis=1) if m is torch else
    m.concatenate((a, a), 1),
    "stack": lambda m, a: m.stack((a, a, a), 1),
    "as_strided": lambda m, a: a.contiguous().as_strided((3, 3), (4, 1), 2),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(PARITY))
def test_values_match_pytorch(name):
    fn = PARITY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = fn(ember, ember.tensor(A))
        theirs = fn(torch, torch.tensor(A))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(arr(ours), theirs.numpy())
    assert ours.is_contiguous() or not theirs.is_contiguous() or name in ("diagonal",)


SPLITS = {
    "split": lambda m, a: a.split(3, -1),
    "split_list": lambda m, a: m.split(a, [1, 0, 2], 1),
    "chunk": lambda m, a: a.chunk(3, 2),
    "chunk_more_than_size": lambda m, a: a.chunk(5, 0),
    "tensor_split": lambda m, a: a.tensor_split(3, 2),
    "tensor_split_indices": lambda m, a: a.tensor_split([1, -1, 10], 2),
    "tensor_split_tensor": lambda m, a: a.tensor_split(m.tensor([1, 2]), 1),
    "unbind": lambda m, a: a.unbind(-1),
    "broadcast_tensors": lambda m, a: m.broadcast_tensors(a, a[0, :1]),
    "atleast_3d": lambda m, a: m.atleast_3d(a[0, 0], a[0], a[0, 0, 0]),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(SPLITS))
def test_multi_output_values_match_pytorch(name):
    ours = SPLITS[name](ember, ember.tensor(A))
    theirs = SPLITS[name](torch, torch.tensor(A))
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(arr(o), t.numpy())


GRAD_FN_NAMES = {
    "x[1:3]": (lambda x: x[1:3], "SliceBackward0"),
    "x[0]": (lambda x: x[0], "SelectBackward0"),
    "x[None]": (lambda x: x[None], "UnsqueezeBackward0"),
    "x[...]": (lambda x: x[...], "AliasBackward0"),
    "x[[0, 1]]": (lambda x: x[[0, 1]], "IndexBackward0"),
    "flatten": (lambda x: x.flatten(), "ViewBackward0"),
    "flatten_copy": (lambda x: x.mT.flatten(), "UnsafeViewBackward0"),
    "squeeze": (lambda x: x[None].squeeze(), "SqueezeBackward0"),
    "squeeze_dim": (lambda x: x[None].squeeze(0), "SqueezeBackward1"),
    "squeeze_dims": (lambda x: x[None].squeeze((0, 1)), "SqueezeBackward2"),
    "unsqueeze": (lambda x: x.unsqueeze(0), "UnsqueezeBackward0"),
    "swapaxes": (lambda x: x.swapaxes(0, 1), "TransposeBackward0"),
    "t": (lambda x: x[0].t(), "TBackward0"),
    "T": (lambda x: x[0].T, "PermuteBackward0"),
    "mT": (lambda x: x.mT, "TransposeBackward0"),
    "broadcast_to": (lambda x: x.broadcast_to((2, 2, 3, 4)), "ExpandBackward0"),
    "repeat": (lambda x: x.repeat(2, 1, 1), "RepeatBackward0"),
    "cat": (lambda x: ember.cat([x, x]) if isinstance(x, ember.Tensor) else torch.cat([x, x]),
            "CatBackward0"),
    "split": (lambda x: x.split(1)[0], "SplitBackward0"),
    "unbind": (lambda x: x.unbind()[0], "UnbindBackward0"),
    "narrow": (lambda x: x.narrow(1, 1, 2), "SliceBackward0"),
    "flip": (lambda x: x.flip(0), "FlipBackward0"),
    "roll": (lambda x: x.roll(1, 0), "RollBackward0"),
    "rot90": (lambda x: x.rot90(), "Rot90Backward0"),
    "tril": (lambda x: x.tril(), "TrilBackward0"),
    "diag_embed": (lambda x: x.diag_embed(), "DiagEmbedBackward0"),
    "diagonal": (lambda x: x.diagonal(), "DiagonalBackward0"),
    "movedim": (lambda x: x.movedim(0, 1), "PermuteBackward0"),
    "unfold": (lambda x: x.unfold(2, 2, 1), "UnfoldBackward0"),
    "as_strided": (lambda x: x.as_strided((2, 2), (1, 1)), "AsStridedBackward0"),
}


@pytest.mark.parametrize("name", sorted(GRAD_FN_NAMES))
def test_grad_fn_names(name):
    fn, expected = GRAD_FN_NAMES[name]
    assert fn(ember.tensor(A, requires_grad=True)).grad_fn.name() == expected
    if torch is not None:
        assert fn(torch.tensor(A, requires_grad=True)).grad_fn.name() == expected


# ----------------------------------------------------------------------
# cat: promotion, legacy empties, gradients


@pytest.mark.parametrize("dtypes,expected", [
    (("int64", "float32"), "float32"),
    (("int64", "bool"), "int64"),
    (("uint8", "int8"), "int16"),
    (("float16", "float64"), "float64"),
    (("int32", "int32"), "int32"),
])
def test_cat_promotes(dtypes, expected):
    parts = [ember.ones(2, dtype=getattr(ember, d)) for d in dtypes]
    assert ember.cat(parts).dtype.name == expected
    assert ember.stack(parts).dtype.name == expected
    if torch is not None:
        tparts = [torch.ones(2, dtype=getattr(torch, d)) for d in dtypes]
        assert str(torch.cat(tparts).dtype) == f"torch.{expected}"


def test_cat_gradient_across_dtypes():
    a = ember.ones(2, 2, dtype=ember.float32, requires_grad=True)
    b = ember.ones(1, 2, dtype=ember.float64, requires_grad=True)
    out = ember.cat([a, b])
    assert out.dtype is ember.float64
    (out * 2).sum().backward()
    assert a.grad.dtype is ember.float32 and a.grad.tolist() == [[2, 2], [2, 2]]
    assert b.grad.tolist() == [[2, 2]]


def test_cat_skips_legacy_empty_tensors():
    a = ember.ones(2, 3, requires_grad=True)
    empty = ember.zeros(0, requires_grad=True)
    out = ember.cat([empty, a, empty], 1)
    assert tuple(out.shape) == (2, 3)
    out.sum().backward()
    assert a.grad.tolist() == [[1, 1, 1]] * 2 and empty.grad is None
    assert tuple(ember.cat([ember.zeros(0), ember.zeros(0)]).shape) == (0,)
    assert tuple(ember.cat([ember.zeros(0, 3), ember.ones(2, 3)]).shape) == (2, 3)


# ----------------------------------------------------------------------
# edge cases


def test_flatten_special_cases():
    x = ember.zeros(3)
    assert x.flatten() is x
    assert tuple(ember.zeros(()).flatten().shape) == (1,)
    assert tuple(ember.zeros(2, 0, 3).flatten(1).shape) == (2, 0)


def test_zero_dim_and_empty():
    s = ember.tensor(2.0, requires_grad=True)
    assert tuple(s.unsqueeze(0).shape) == (1,)
    assert tuple(s.squeeze().shape) == () and tuple(s.squeeze(0).shape) == ()
    assert tuple(s.t().shape) == () and tuple(s.flatten().shape) == (1,)
    assert tuple(ember.atleast_2d(s).shape) == (1, 1)
    e = ember.zeros(0, 3)
    assert [tuple(p.shape) for p in e.split(2)] == [(0, 3)]
    assert [tuple(p.shape) for p in e.chunk(2)] == [(0, 3), (0, 3)]
    assert tuple(e.flip(0).shape) == (0, 3) and tuple(e.repeat(3, 0).shape) == (0, 0)
    assert tuple(e.diagonal().shape) == (0,) and e.unbind(0) == ()
    assert tuple(ember.zeros(2, 3).repeat(0, 1).shape) == (0, 3)


def test_transpose_property_warns_when_not_2d():
    with pytest.warns(UserWarning, match="x.T"):
        ember.zeros(2, 3, 4).T
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuple(ember.zeros(2, 3).T.shape) == (3, 2)


def test_views_are_views():
    x = ember.tensor(A.copy())
    for v in (x.flatten(), x.squeeze(), x.unsqueeze(1), x.swapaxes(0, 2), x.mT, x.narrow(2, 1, 2),
              x.select(1, 0), x.diagonal(0, 1, 2), x.movedim(0, -1), x.unflatten(2, (2, 2)),
              x.unfold(2, 2, 2), x.split(1)[1], x.unbind(2)[3], x[1, ::2], x[..., None]):
        assert v._version is x._version
        assert np.shares_memory(v.cpu_array(), x.cpu_array())
    for c in (x.flip(0), x.roll(1), x.repeat(1, 1, 1), ember.cat([x]), x.tril(), x.rot90()):
        assert not np.shares_memory(c.cpu_array(), x.cpu_array())


def test_writes_into_expanded_views_are_refused():
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.expand(2, 3).add_(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.expand(2, 3).masked_fill_(ember.ones(2, 3, dtype=ember.bool), 1.0)


def test_unfold_gradient_with_overlapping_windows():
    x = ember.tensor(np.arange(5.0), requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    assert x.grad.tolist() == [1, 2, 3, 2, 1]


def test_as_strided_rules():
    x = ember.tensor(np.arange(6.0))
    assert x.as_strided((2, 2), (3, 1), 1).tolist() == [[1, 2], [4, 5]]
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        x.as_strided((3, 3), (3, 1))
    with pytest.raises(RuntimeError, match="contiguous"):
        x.view(2, 3).t().as_strided((2,), (1,))


def test_inplace_tril_triu():
    x = ember.tensor(A[0].copy())
    out = x.tril_(1)
    assert out is x and x._version.value == 1
    np.testing.assert_allclose(arr(x), np.tril(A[0], 1))
    y = ember.tensor(A[0].copy())
    y.triu_(-1)
    np.testing.assert_allclose(arr(y), np.triu(A[0], -1))


def test_split_returns_tuple_of_views_with_shared_gradient():
    x = ember.tensor(A, requires_grad=True)
    a, b = x.split([1, 1])
    (a * 2 + b * 3).sum().backward()
    expected = np.ones_like(A) * 2
    expected[1] = 3
    np.testing.assert_allclose(arr(x.grad), expected)


def test_repeat_interleave_counts_only():
    assert ember.repeat_interleave(ember.tensor([1, 2, 0, 3])).tolist() == [0, 1, 1, 3, 3, 3]
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        ember.tensor([1.0, 2.0]).repeat_interleave(ember.tensor([1, -1]))


def test_broadcast_shapes_returns_size():
    out = ember.broadcast_shapes((2, 1), (3,), 1)
    assert isinstance(out, ember.Size) and tuple(out) == (2, 3)
    assert tuple(ember.broadcast_shapes()) == ()


@pytest.mark.parametrize("shape, target, fits", [
    ((512,), (128, 512), True),          # a linear layer's bias
    ((), (3, 4), True),
    ((1, 4), (3, 4), True),
    ((3, 1, 5), (2, 3, 4, 5), True),
    ((4,), (4, 1), False),               # would stretch the target's last dim
    ((2, 4), (3, 4), False),
    ((2, 3, 4), (3, 4), False),          # more dims than the target
])
def test_broadcasts_to_agrees_with_numpy(shape, target, fits):
    """ops/_broadcast.broadcasts_to (in-place adds, fused kernels' leaves): whether an
    operand broadcasts to `target` leaving it unchanged, as NumPy decides."""
    from ember.ops._broadcast import broadcasts_to

    assert broadcasts_to(shape, target) is fits
    try:
        numpy_fits = np.broadcast_shapes(shape, target) == target
    except ValueError:
        numpy_fits = False
    assert numpy_fits is fits


def test_large_concatenations_split_over_threads_equal_numpy(monkeypatch):
    # past CONCATENATE_SPLIT_MIN elements, a cat along a dim past the first is copied by
    # the threads a block of leading rows each: the same bits as NumPy's, gradients too
    from ember.ops import joining

    monkeypatch.setattr(joining, "CONCATENATE_SPLIT_MIN", 1)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        rng = np.random.default_rng(3)
        arrays = [rng.standard_normal((5, 4, w)) for w in (3, 1, 6)]
        parts = [ember.tensor(a, requires_grad=True) for a in arrays]
        out = ember.cat(parts, dim=2)
        np.testing.assert_array_equal(out.detach().numpy(), np.concatenate(arrays, axis=2))
        assert out.detach().numpy().flags.c_contiguous
        g = rng.standard_normal((5, 4, 10))
        out.backward(ember.tensor(g))
        for p, (lo, hi) in zip(parts, ((0, 3), (3, 4), (4, 10))):
            np.testing.assert_array_equal(p.grad.numpy(), g[..., lo:hi])
        mixed = ember.cat([ember.ones(5, 2, dtype=ember.float32),
                           ember.zeros(5, 3, dtype=ember.float64)], dim=1)
        assert mixed.dtype == ember.float64
        np.testing.assert_array_equal(mixed.numpy(), np.concatenate([np.ones((5, 2)),
                                                                      np.zeros((5, 3))], 1))
    finally:
        ember.set_num_threads(before)
