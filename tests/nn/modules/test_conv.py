"""Conv1d/2d/3d and ConvTranspose1d/2d/3d: shapes, arguments, reprs, initialization,
padding modes, output_size, errors; and F.conv*/F.conv_transpose* edge cases."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close
from tests.ops.db_conv import ref_conv, ref_conv_transpose


@pytest.mark.parametrize("cls,shape,out", [
    (nn.Conv1d, (2, 4, 9), (2, 6, 7)),
    (nn.Conv2d, (2, 4, 9, 8), (2, 6, 7, 6)),
    (nn.Conv3d, (2, 4, 5, 6, 7), (2, 6, 3, 4, 5)),
])
def test_conv_shapes_and_parameters(cls, shape, out):
    m = cls(4, 6, 3)
    nd = len(shape) - 2
    assert m.weight.shape == (6, 4) + (3,) * nd and m.bias.shape == (6,)
    assert m.kernel_size == (3,) * nd and m.stride == (1,) * nd and m.padding == (0,) * nd
    assert m(ember.randn(*shape)).shape == out
    assert m(ember.randn(*shape[1:])).shape == out[1:]       # unbatched input
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]


@pytest.mark.parametrize("cls,shape,out", [
    (nn.ConvTranspose1d, (2, 4, 5), (2, 6, 11)),
    (nn.ConvTranspose2d, (2, 4, 5, 4), (2, 6, 11, 9)),
    (nn.ConvTranspose3d, (1, 4, 2, 3, 2), (1, 6, 5, 7, 5)),
])
def test_conv_transpose_shapes(cls, shape, out):
    m = cls(4, 6, 3, stride=2)
    nd = len(shape) - 2
    assert m.weight.shape == (4, 6) + (3,) * nd
    assert m(ember.randn(*shape)).shape == out


def test_reprs_match_pytorch():
    assert repr(nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False,
                          padding_mode="reflect", dilation=2)) == (
        "Conv2d(4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
        "groups=2, bias=False, padding_mode=reflect)")
    assert repr(nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1, output_padding=1)) == (
        "ConvTranspose2d(4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
        "output_padding=(1, 1))")
    assert repr(nn.Conv1d(4, 8, 3, padding="same")) == (
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=same)")
    assert repr(nn.Conv3d(1, 2, (1, 2, 3))) == (
        "Conv3d(1, 2, kernel_size=(1, 2, 3), stride=(1, 1, 1))")


def test_same_padding_attributes():
    m = nn.Conv2d(4, 8, (3, 4), padding="same")
    assert m.padding == "same" and m._reversed_padding_repeated_twice == [1, 2, 1, 1]
    assert m(ember.randn(1, 4, 5, 6)).shape == (1, 8, 5, 6)
    d = nn.Conv2d(4, 4, 3, padding="same", dilation=2)
    assert d._reversed_padding_repeated_twice == [2, 2, 2, 2]
    assert nn.Conv2d(4, 4, 3, padding=(1, 2))._reversed_padding_repeated_twice == [2, 2, 1, 1]


@pytest.mark.parametrize("cls,transposed", [(nn.Conv2d, False), (nn.Conv1d, False),
                                            (nn.ConvTranspose2d, True)])
def test_default_init_distribution(cls, transposed):
    """weight ~ U(-b, b) with b = 1/sqrt(fan_in) (kaiming_uniform_, a=sqrt(5)); bias too."""
    ember.manual_seed(0)
    m = cls(32, 64, 5)
    w = m.weight.detach().numpy()
    k = 5 ** (w.ndim - 2)
    fan_in = (64 if transposed else 32) * k
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(w.mean()) < 0.02 * bound
    b = m.bias.detach().numpy()
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound


def test_init_is_reproducible_and_reset():
    ember.manual_seed(3)
    a = nn.Conv2d(2, 3, 3)
    ember.manual_seed(3)
    b = nn.Conv2d(2, 3, 3)
    assert_close(a.weight, b.weight) and assert_close(a.bias, b.bias)
    before = a.weight.detach().numpy().copy()
    a.reset_parameters()
    assert not np.allclose(before, a.weight.detach().numpy())


def test_dtype_and_no_bias():
    m = nn.Conv2d(2, 3, 3, bias=False, dtype=ember.float64)
    assert m.weight.dtype is ember.float64 and m.bias is None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert m(ember.randn(1, 2, 4, 4, dtype=ember.float64)).dtype is ember.float64


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_padding_modes_match_explicit_pad_and_gradcheck(mode):
    m = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    x = ember.randn(1, 2, 4, 5, dtype=ember.float64, requires_grad=True)
    pad_mode = "constant" if mode == "zeros" else mode
    expected = F.conv2d(F.pad(x, (2, 2, 1, 1), mode=pad_mode), m.weight, m.bias)
    assert_close(m(x), expected)
    assert gradcheck(lambda x, w, b: nn.functional.conv2d(
        F.pad(x, (2, 2, 1, 1), mode=pad_mode), w, b), (x, m.weight, m.bias))
    assert gradcheck(lambda x: m(x), (x,))


def test_conv_transpose_output_size():
    m = nn.ConvTranspose2d(4, 2, 3, stride=2)
    x = ember.randn(1, 4, 5, 5)
    assert m(x).shape == (1, 2, 11, 11)
    assert m(x, output_size=(12, 11)).shape == (1, 2, 12, 11)
    assert m(x, output_size=[1, 2, 12, 12]).shape == (1, 2, 12, 12)
    with pytest.raises(ValueError, match=r"requested an output size of \(14, 14\), but valid "
                                         r"sizes range from \[11, 11\] to \[12, 12\]"):
        m(x, output_size=(14, 14))
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        m(x, output_size=(12,))


def test_module_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 8, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 8, 3, padding_mode="bad")
    with pytest.raises(ValueError, match="Invalid padding string 'foo'"):
        nn.Conv2d(1, 8, 3, padding="foo")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(1, 8, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                                         "ConvTranspose2d"):
        nn.ConvTranspose2d(4, 2, 3, padding_mode="reflect")


def test_functional_errors_name_the_shapes():
    x = ember.randn(1, 1, 5, 5)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[8, 3, 3, 3\], "
                                           r"expected input\[1, 1, 5, 5\] to have 3 channels, "
                                           "but got 1 channels instead"):
        nn.Conv2d(3, 8, 3)(x)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to conv2d, but got input of size: \[5, 5\]"):
        nn.Conv2d(3, 8, 3)(ember.randn(5, 5))
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: "
                                           r"\(5 x 5\). Kernel size: \(7 x 7\)"):
        F.conv2d(x, ember.randn(8, 1, 7, 7))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv2d(x, ember.randn(8, 1, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(x, ember.randn(8, 1, 3, 3), padding="foo")
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 4"):
        F.conv2d(ember.randn(1, 4, 5, 5), ember.randn(6, 2, 3, 3), groups=4)
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 6 elements"):
        F.conv2d(ember.randn(1, 4, 5, 5), ember.randn(6, 2, 3, 3), ember.randn(5), groups=2)
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(x, ember.randn(8, 1, 3, 3), stride=0)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv2d(x, ember.randn(8, 1, 3, 3), padding=-1)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.conv2d(x, ember.randn(8, 1, 3, 3), dilation=0)
    with pytest.raises(RuntimeError, match="list of 2 values to match the convolution"):
        F.conv2d(x, ember.randn(8, 1, 3, 3), stride=(1, 1, 1))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.conv2d(x, ember.randn(8, 1, 3, 3, dtype=ember.float64))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.conv2d([1.0], ember.randn(8, 1, 3, 3))


def test_conv_transpose_errors():
    x = ember.randn(1, 4, 5, 5)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[6, 4, 3, 3\], "
                                           r"expected input\[1, 4, 5, 5\] to have 6 channels"):
        F.conv_transpose2d(x, ember.randn(6, 4, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride "
                                           "or dilation, but got output_padding_height: 1"):
        F.conv_transpose2d(x, ember.randn(4, 2, 3, 3), output_padding=1)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose2d(ember.randn(1, 4, 1, 1), ember.randn(4, 2, 1, 1), padding=1)
    with pytest.raises(TypeError, match="must be tuple of ints, not str"):
        F.conv_transpose2d(x, ember.randn(4, 2, 3, 3), padding="same")


def test_empty_batch_and_channels():
    assert F.conv2d(ember.randn(0, 4, 5, 5), ember.randn(6, 4, 3, 3)).shape == (0, 6, 3, 3)
    assert F.conv2d(ember.randn(1, 0, 5, 5), ember.randn(6, 0, 3, 3)).shape == (1, 6, 3, 3)


def test_integer_conv():
    x = np.arange(2 * 9).reshape(1, 2, 3, 3)
    w = np.ones((1, 2, 2, 2), dtype=np.int64)
    out = F.conv2d(ember.tensor(x), ember.tensor(w))
    assert out.dtype is ember.int64
    assert_close(out, ref_conv(x, w).astype(np.int64))


def test_grad_fn_names_and_double_backward():
    x = ember.randn(1, 2, 5, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 2, 3, 3, dtype=ember.float64, requires_grad=True)
    y = F.conv2d(x, w, stride=2)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    assert F.conv_transpose2d(y, w).grad_fn.name() == "ConvolutionBackward0"
    # d/dx of sum(conv(x, w)^2) is differentiable again, w.r.t. both x and w
    assert gradgradcheck(lambda x, w: (F.conv2d(x, w, stride=2) ** 2).sum(), (x, w))


def test_transposed_is_adjoint_of_conv():
    """<conv(x, w), y> == <x, conv_transpose(y, w)> for the same geometry."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 2, 3, 2))
    kw = {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2}
    y = ref_conv(x, w, **kw)
    c = rng.standard_normal(y.shape)
    back = F.conv_transpose2d(ember.tensor(c), ember.tensor(w), output_padding=(0, 0), **kw)
    assert back.shape == x.shape
    assert math.isclose(float((y * c).sum()), float((x * back.numpy()).sum()), rel_tol=1e-9)
    assert_close(back, ref_conv_transpose(c, w, **kw))


def test_large_batch_uses_several_chunks(monkeypatch):
    """Batches bigger than one cache-sized chunk give the same result as small ones."""
    from ember.ops import conv_arrays as conv

    monkeypatch.setattr(conv, "_CHUNK_BYTES", 100_000)   # a few images per chunk
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 8, 12, 12))
    w = rng.standard_normal((16, 8, 3, 3))
    out = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1)
    assert_close(out, ref_conv(x, w, padding=1))
    gy = rng.standard_normal(out.shape)
    tx, tw = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    F.conv2d(tx, tw, padding=1).backward(ember.tensor(gy))
    assert_close(tx.grad, ref_conv_transpose(gy, w, padding=1))
    expected_gw = ref_conv(x.transpose(1, 0, 2, 3), gy.transpose(1, 0, 2, 3), padding=1)
    assert_close(tw.grad, expected_gw.transpose(1, 0, 2, 3))
