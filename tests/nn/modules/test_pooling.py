"""Pooling layers and functions: reprs, attributes, return_indices, unpooling, ties and
NaN, empty batches, errors, and the scatter/gather pair behind max pooling's gradient."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close
from tests.ops.db_pooling import ref_avg_pool, ref_max_pool


def test_reprs_and_attributes_match_pytorch():
    reprs = {
        nn.MaxPool2d(2): "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                         "ceil_mode=False)",
        nn.MaxPool1d(3, 1, 1, return_indices=True): "MaxPool1d(kernel_size=3, stride=1, "
                                                    "padding=1, dilation=1, ceil_mode=False)",
        nn.AvgPool2d(3, 1, 1): "AvgPool2d(kernel_size=3, stride=1, padding=1)",
        nn.AvgPool1d(2): "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))",
        nn.AvgPool3d(2): "AvgPool3d(kernel_size=2, stride=2, padding=0)",
        nn.AdaptiveAvgPool2d((2, 3)): "AdaptiveAvgPool2d(output_size=(2, 3))",
        nn.AdaptiveMaxPool1d(3): "AdaptiveMaxPool1d(output_size=3)",
        nn.LPPool2d(2, 3): "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)",
        nn.MaxUnpool2d(2): "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))",
        nn.MaxUnpool1d(2): "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))",
    }
    for module, text in reprs.items():
        assert repr(module) == text
    m = nn.MaxPool2d(3)
    assert (m.kernel_size, m.stride, m.padding, m.dilation) == (3, 3, 0, 1)
    assert nn.AvgPool2d(2, divisor_override=3).divisor_override == 3


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_modules_match_functions(nd):
    x = ember.randn(*(2, 3) + (6,) * nd)
    mods = {f"MaxPool{nd}d": (2,), f"AvgPool{nd}d": (2,), f"AdaptiveAvgPool{nd}d": (3,),
            f"AdaptiveMaxPool{nd}d": (3,), f"LPPool{nd}d": (2, 2)}
    for name, args in mods.items():
        fn = getattr(F, {"MaxPool": "max_pool", "AvgPool": "avg_pool", "LPPool": "lp_pool",
                         "AdaptiveAvgPool": "adaptive_avg_pool",
                         "AdaptiveMaxPool": "adaptive_max_pool"}[name[:-2]] + f"{nd}d")
        arg = x.abs() if name.startswith("LP") else x
        assert_close(getattr(nn, name)(*args)(arg), fn(arg, *args))


def test_return_indices_and_unpool_roundtrip():
    x = ember.tensor(np.random.default_rng(0).permutation(36).reshape(1, 1, 6, 6) * 1.0)
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    y, idx = pool(x)
    assert idx.dtype is ember.int64 and idx.shape == (1, 1, 3, 3)
    back = unpool(y, idx)
    assert back.shape == x.shape
    # every window keeps its maximum, the rest is zero
    assert_close(F.max_pool2d(back, 2), y)
    assert int((back.numpy() != 0).sum()) == 9
    assert unpool(y, idx, output_size=(7, 7)).shape == (1, 1, 7, 7)
    with pytest.raises(ValueError, match="invalid output_size"):
        unpool(y, idx, output_size=(9, 9))
    with pytest.raises(RuntimeError, match="Found an invalid max index: 100"):
        F.max_unpool2d(y, idx * 0 + 100, 2)
    with pytest.raises(RuntimeError, match="indices should be type int64"):
        F.max_unpool2d(y, idx.to(ember.int32), 2)


def test_max_unpool_gradients():
    x = ember.randn(1, 2, 2, 2, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[[[0, 3], [9, 14]], [[5, 2], [8, 15]]]])
    assert gradcheck(lambda x: F.max_unpool2d(x, idx, 2), (x,))
    assert gradgradcheck(lambda x: F.max_unpool2d(x, idx, 2), (x,))
    assert F.max_unpool2d(x, idx, 2).grad_fn.name() == "MaxUnpool2DBackward0"


def test_ties_pick_the_first_and_nan_wins():
    x = ember.ones(1, 1, 2, 2)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.item() == 0 and y.item() == 1
    nan = ember.tensor([[[[float("nan"), 1.0], [2.0, float("nan")]]]])
    y, idx = F.max_pool2d(nan, 2, return_indices=True)
    assert np.isnan(y.item()) and idx.item() == 3          # the last NaN, as PyTorch
    inf = ember.full((1, 1, 3, 3), -float("inf"))
    y, idx = F.max_pool2d(inf, 2, stride=2, padding=1, return_indices=True)
    assert idx.numpy().ravel().tolist() == [0, 1, 3, 4]      # first element inside the input


def test_overlapping_windows_sum_gradients():
    x = ember.tensor([[[1.0, 5.0, 2.0, 0.0]]], requires_grad=True)
    F.max_pool1d(x, 3, stride=1).sum().backward()           # 5 is the max of both windows
    assert x.grad.numpy().ravel().tolist() == [0, 2, 0, 0]


def test_avg_pool_options_against_reference():
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 7))
    for kw in [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                    count_include_pad=False),
               dict(kernel_size=(2, 3), stride=(1, 2), divisor_override=2)]:
        assert_close(F.avg_pool2d(ember.tensor(x), **kw), ref_avg_pool(x, **kw))
        assert_close(F.max_pool2d(ember.tensor(x), kw["kernel_size"], kw["stride"],
                                  kw.get("padding", 0), ceil_mode=kw.get("ceil_mode", False)),
                     ref_max_pool(x, kw["kernel_size"], kw["stride"], kw.get("padding", 0),
                                  ceil_mode=kw.get("ceil_mode", False)))


def test_grad_fn_names():
    x = ember.randn(1, 2, 4, 4, requires_grad=True)
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward0"
    assert F.adaptive_avg_pool2d(x, 3).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F.adaptive_max_pool2d(x, 3).grad_fn.name() == "AdaptiveMaxPool2DBackward0"


def test_unbatched_and_empty_batch():
    assert F.max_pool2d(ember.randn(3, 4, 4), 2).shape == (3, 2, 2)
    assert F.avg_pool1d(ember.randn(3, 4), 2).shape == (3, 2)
    assert F.max_pool2d(ember.randn(0, 1, 4, 4), 2).shape == (0, 1, 2, 2)
    assert F.adaptive_avg_pool2d(ember.randn(3, 5, 5), (2, None)).shape == (3, 2, 5)
    assert F.adaptive_avg_pool2d(ember.randn(1, 3, 5, 5), (3, 0)).shape == (1, 3, 3, 0)


def test_integer_pooling():
    x = ember.arange(16).reshape(1, 1, 4, 4)
    assert F.max_pool2d(x, 2).numpy().ravel().tolist() == [5, 7, 13, 15]
    assert F.avg_pool2d(x, 2).dtype is ember.int64


def test_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel "
                                           "size, but got pad=2, kernel_size=3"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(2x5x5\). Calculated output "
                                           r"size: \(2x0x0\). Output size is too small"):
        F.max_pool2d(x, 7)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.max_pool2d(ember.randn(5, 5), 2)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.avg_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="kernel_size must either be a single int, or a "
                                           "tuple of two ints"):
        F.max_pool2d(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.adaptive_max_pool2d(ember.randn(5, 5), 3)
    with pytest.raises(RuntimeError, match="output_size must be 2"):
        F.adaptive_avg_pool2d(x, (3, 4, 5))
    with pytest.raises(RuntimeError, match="elements of output_size must be greater than or "
                                           "equal to 0"):
        F.adaptive_avg_pool2d(x, -1)


def test_lp_pool_is_a_power_mean():
    x = ember.rand(1, 2, 4, 4, dtype=ember.float64) + 0.5
    expected = (F.avg_pool2d(x ** 3, 2) * 4) ** (1 / 3)
    assert_close(F.lp_pool2d(x, 3, 2), expected)
    assert nn.LPPool2d(3, 2)(x).shape == (1, 2, 2, 2)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, ceil_mode=True),
                                    dict(kernel_size=2, dilation=2)])
def test_max_pool_nan_and_ties_match_pytorch(kwargs):
    """NaN wins its window (the last NaN when several), ties keep the first: indices and
    values as PyTorch gives them, on an input dense with NaNs and repeated values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    values = rng.integers(0, 4, (2, 3, 9, 9)).astype(np.float32)   # many ties
    values[rng.random(values.shape) < 0.1] = np.nan
    y, idx = F.max_pool2d(ember.tensor(values), return_indices=True, **kwargs)
    ty, tidx = torch.nn.functional.max_pool2d(torch.tensor(values), return_indices=True,
                                              **kwargs)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, ceil_mode=True),
                                    dict(kernel_size=2, dilation=2),
                                    dict(kernel_size=(2, 3), stride=1, padding=(1, 0))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_max_pool_values_only_path_matches_the_indexed_one(kwargs, dtype):
    """Without indices or a gradient (inference) the values come from a running maximum;
    they equal the values of the indexed path, NaN, -inf and ties included."""
    rng = np.random.default_rng(4)
    values = rng.integers(-3, 4, (2, 3, 9, 8)).astype(dtype)
    if dtype != np.int32:
        values[rng.random(values.shape) < 0.1] = np.nan
        values[rng.random(values.shape) < 0.1] = -np.inf
    x = ember.tensor(values)
    with ember.no_grad():
        fast = F.max_pool2d(x, **kwargs)
    indexed, _ = F.max_pool2d(x, return_indices=True, **kwargs)
    assert fast.dtype == indexed.dtype
    np.testing.assert_array_equal(fast.numpy(), indexed.numpy())
    assert fast.grad_fn is None
    w = ember.tensor(values.astype(np.float64), requires_grad=True) if dtype != np.int32 else None
    if w is not None:  # a graph is recorded: the indexed path, with its backward
        assert F.max_pool2d(w, **kwargs).grad_fn.name() == "MaxPool2DWithIndicesBackward0"


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_global_average_pooling_is_one_mean(nd):
    """Adaptive average pooling to size 1 (a classifier's head) is the mean over the
    spatial dims, for batched and unbatched inputs, recorded as PyTorch records it."""
    pool = getattr(F, f"adaptive_avg_pool{nd}d")
    x = ember.randn(*((2, 3) + (4, 5, 6)[:nd]), dtype=ember.float64, requires_grad=True)
    out = pool(x, 1)
    dims = tuple(range(2, 2 + nd))
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy().mean(dims,
                                                                                keepdims=True))
    assert out.grad_fn.name() == "MeanBackward1"
    single = pool(x[0], 1)
    np.testing.assert_allclose(single.detach().numpy(), out[0].detach().numpy())
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(x.shape, 1 / np.prod(x.shape[2:])))
