"""Padding layers and F.pad: values in every mode, negative padding (cropping), reprs,
gradients, errors."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

_NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def test_reprs_and_padding_attributes():
    assert repr(nn.ZeroPad2d(2)) == "ZeroPad2d((2, 2, 2, 2))"
    assert repr(nn.ConstantPad1d((1, 2), 3.5)) == "ConstantPad1d(padding=(1, 2), value=3.5)"
    assert repr(nn.ReflectionPad3d(1)) == "ReflectionPad3d((1, 1, 1, 1, 1, 1))"
    assert repr(nn.ReplicationPad1d((1, 2))) == "ReplicationPad1d((1, 2))"
    assert repr(nn.CircularPad2d(1)) == "CircularPad2d((1, 1, 1, 1))"
    assert nn.ZeroPad2d(2).value == 0.0 and isinstance(nn.ZeroPad2d(2), nn.ConstantPad2d)
    assert nn.ReflectionPad2d((1, 2, 3, 4)).padding == (1, 2, 3, 4)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_mode_modules_match_numpy(mode, nd):
    x = np.random.default_rng(nd).standard_normal((2, 3) + (4,) * nd)
    pads = (1, 2, 2, 1, 3, 0)[:2 * nd]
    name = {"reflect": "ReflectionPad", "replicate": "ReplicationPad",
            "circular": "CircularPad"}[mode]
    out = getattr(nn, f"{name}{nd}d")(pads)(ember.tensor(x))
    widths = [(0, 0), (0, 0)] + [(pads[2 * i], pads[2 * i + 1]) for i in range(nd)][::-1]
    assert_close(out, np.pad(x, widths, mode=_NP_MODE[mode]))


def test_constant_and_zero_pad_modules():
    x = ember.ones(1, 2, 3)
    assert_close(nn.ConstantPad1d((1, 0), 2.5)(x)[..., 0], ember.full((1, 2), 2.5))
    assert nn.ZeroPad3d(1)(ember.ones(1, 1, 2, 2, 2)).shape == (1, 1, 4, 4, 4)
    assert nn.ConstantPad2d((1, 1, 0, 2), -1.0)(x).shape == (1, 4, 5)


def test_negative_padding_crops():
    x = ember.arange(10.0).reshape(2, 5)
    assert F.pad(x, (-1, -2)).numpy().tolist() == [[1.0, 2.0], [6.0, 7.0]]
    assert F.pad(x, (-1, 2), mode="reflect").numpy()[0].tolist() == [1, 2, 3, 4, 3, 2]
    assert F.pad(x[None], (-2, 3), mode="circular").numpy()[0, 0].tolist() == [2, 3, 4, 2, 3, 4]
    assert F.pad(x, (1, -1), mode="replicate").numpy()[0].tolist() == [0, 0, 1, 2, 3]
    x = ember.randn(2, 3, 5, dtype=ember.float64, requires_grad=True)
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert gradcheck(lambda t, m=mode: F.pad(t, (-1, 2, 1, -1), mode=m), (x,))
        assert gradgradcheck(lambda t, m=mode: F.pad(t, (2, -1), mode=m), (x,))


def test_integer_input_and_value_cast():
    out = F.pad(ember.arange(5).reshape(1, 1, 5), (2, 3), value=1.7)
    assert out.dtype is ember.int64 and out.numpy().ravel().tolist() == [1, 1, 0, 1, 2, 3, 4, 1,
                                                                           1, 1]


def test_grad_fn_names():
    x = ember.randn(2, 3, 5, requires_grad=True)
    assert F.pad(x, (1, 1)).grad_fn.name() == "ConstantPadNdBackward0"
    assert F.pad(x, (1, 1), mode="reflect").grad_fn.name() == "ReflectionPad1DBackward0"
    assert F.pad(x, (1, 1), mode="replicate").grad_fn.name() == "ReplicationPad1DBackward0"


def test_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two "
                                           "times the input dimension"):
        F.pad(x, (1,) * 10)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D "
                                                  "input tensor"):
        F.pad(x, (1, 2), mode="reflect")
    with pytest.raises(RuntimeError, match=r"Argument #4: Padding size should be less than the "
                                           r"corresponding input dimension, but got: padding "
                                           r"\(5, 2\) at dimension 2 of input \[2, 5, 5\]"):
        F.pad(ember.randn(2, 5, 5), (5, 2, 0, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(ember.randn(2, 5, 5), (6, 2, 0, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 2), mode="foo")
    with pytest.raises(RuntimeError, match="doesn't take in value argument"):
        F.pad(ember.randn(2, 5), (1, 2), mode="reflect", value=2)
    with pytest.raises(TypeError, match="found element of type float at pos 0"):
        F.pad(x, (1.5, 2))
    with pytest.raises(RuntimeError, match="narrow"):
        F.pad(ember.randn(5), (-3, -3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.CircularPad1d(1)(x)


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("mode, numpy_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                              ("circular", "wrap")])
def test_2d_padding_is_one_node_matching_numpy_forward_and_backward(mode, numpy_mode, numba):
    """F.pad of the last two dims runs as one map of both (resample.PlaneMap: the numba
    kernels, or NumPy's indexing with numba off), one node with one edge, as PyTorch's."""
    from ember.ops import _native as native

    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((2, 3, 5, 6))
    pads = ((0, 0), (0, 0), (2, 1), (3, 2))   # F.pad's (3, 2, 2, 1): last dim first
    want = np.pad(x0, pads, mode=numpy_mode)
    g0 = rng.standard_normal(want.shape)
    # the gradient: each output's gradient added into the input element it copies
    src = np.arange(x0.size).reshape(x0.shape)
    taken = np.pad(src, pads, mode=numpy_mode)
    want_grad = np.bincount(taken.ravel(), g0.ravel(), minlength=x0.size).reshape(x0.shape)
    with native.use_numba(numba):
        x = ember.tensor(x0, requires_grad=True)
        y = F.pad(x, (3, 2, 2, 1), mode=mode)
        y.backward(ember.tensor(g0))
        assert ember.autograd.gradgradcheck(lambda t: F.pad(t, (3, 2, 2, 1), mode=mode),
                                            (ember.tensor(x0[:1, :1], requires_grad=True),))
    assert y.grad_fn.name() == {"reflect": "ReflectionPad2DBackward0",
                                "replicate": "ReplicationPad2DBackward0",
                                "circular": "CircularPad2DBackward0"}[mode]
    assert len(y.grad_fn.next_functions) == 1
    np.testing.assert_array_equal(y.detach().numpy(), want)
    np.testing.assert_allclose(x.grad.numpy(), want_grad, rtol=1e-12, atol=1e-12)


def test_2d_padding_crops_with_negative_amounts():
    x = ember.randn(1, 2, 6, 7, requires_grad=True)
    y = F.pad(x, (-1, 2, 1, -2), mode="replicate")
    want = np.pad(x.detach().numpy()[..., :4, 1:], ((0, 0), (0, 0), (1, 0), (0, 2)),
                  mode="edge")
    np.testing.assert_array_equal(y.detach().numpy(), want)
    y.sum().backward()
    assert x.grad.numpy()[..., :, 0].sum() == 0 and x.grad.numpy()[..., 4:, :].sum() == 0
