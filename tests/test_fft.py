"""ember.fft: values against the DFT written out in NumPy, gradients by finite differences,
and both against PyTorch."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((3, 6, 5))
_Z = _X + 1j * _rng.standard_normal((3, 6, 5))


def _dft(n: int, inverse: bool = False) -> np.ndarray:
    k = np.arange(n)
    return np.exp((2j if inverse else -2j) * np.pi * np.outer(k, k) / n)


def test_values_are_the_dft_matrix_products():
    z = ember.tensor(_Z)
    np.testing.assert_allclose(ember.fft.fft(z).numpy(), _Z @ _dft(5).T, atol=1e-12)
    np.testing.assert_allclose(ember.fft.ifft(z, norm="forward").numpy(),
                               _Z @ _dft(5, True).T, atol=1e-12)
    np.testing.assert_allclose(ember.fft.fft(z, norm="ortho").numpy(),
                               _Z @ _dft(5).T / np.sqrt(5), atol=1e-12)
    np.testing.assert_allclose(ember.fft.rfft(ember.tensor(_X)).numpy(),
                               (_X @ _dft(5).T)[..., :3], atol=1e-12)
    two_d = np.einsum("ij,bjk,lk->bil", _dft(6), _Z, _dft(5))
    np.testing.assert_allclose(ember.fft.fft2(z).numpy(), two_d, atol=1e-10)
    x = ember.tensor(_X)
    np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(x), n=5).numpy(), _X, atol=1e-12)
    np.testing.assert_allclose(ember.fft.ifftn(ember.fft.fftn(z)).numpy(), _Z, atol=1e-12)


def test_lengths_dtypes_and_frequencies():
    x = ember.ones(2, 6)
    assert ember.fft.fft(x, n=8).shape == (2, 8) and ember.fft.fft(x, n=3).shape == (2, 3)
    assert ember.fft.rfft(x).dtype == ember.complex64
    assert ember.fft.irfft(ember.fft.rfft(ember.ones(2, 7))).shape == (2, 6)  # 2 (m - 1)
    assert ember.fft.irfft(ember.fft.rfft(x), n=6).dtype == ember.float32
    assert ember.fft.fft(ember.arange(4)).dtype == ember.complex64  # ints: default float
    assert ember.fft.rfftn(ember.ones(4, 6, 8), s=(5, 8)).shape == (4, 5, 5)
    assert ember.fft.fftfreq(5).tolist() == pytest.approx([0.0, 0.2, 0.4, -0.4, -0.2])
    assert ember.fft.rfftfreq(6, d=0.5).tolist() == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    assert ember.fft.fftshift(ember.arange(5)).tolist() == [3, 4, 0, 1, 2]
    assert ember.fft.ifftshift(ember.fft.fftshift(ember.arange(6))).tolist() == list(range(6))


def test_errors():
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        ember.fft.fft(ember.ones(3), norm="bad")
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor"):
        ember.fft.rfft(ember.ones(3, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        ember.fft.fft(ember.ones(3), n=0)
    with pytest.raises(RuntimeError, match="Got shape with 2 values"):
        ember.fft.fftn(ember.ones(3), s=(2, 2))


_TRANSFORMS = {
    "fft": lambda lib, x: lib.fft.fft(x, n=7, dim=1),
    "ifft_ortho": lambda lib, x: lib.fft.ifft(x, norm="ortho"),
    "fftn": lambda lib, x: lib.fft.fftn(x, s=(4, 7)),
    "rfft": lambda lib, x: lib.fft.rfft(x.real if x.is_complex() else x, n=9, dim=1),
    "rfft2_forward": lambda lib, x: lib.fft.rfft2(x.real if x.is_complex() else x,
                                                  norm="forward"),
    "irfft": lambda lib, x: lib.fft.irfft(x, n=9, dim=1),
    "irfftn": lambda lib, x: lib.fft.irfftn(x, s=(5, 6)),
    "hfft": lambda lib, x: lib.fft.hfft(x, norm="ortho"),
    "ihfft": lambda lib, x: lib.fft.ihfft(x.real if x.is_complex() else x),
}


def _real_loss(y):
    weights = np.resize(np.cos(np.arange(y.numel()) * 0.7), tuple(y.shape))
    w = ember.tensor(weights) if isinstance(y, ember.Tensor) else torch.tensor(weights)
    return (y.abs() * w).sum() if y.is_complex() else (y * w).sum()


@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
@pytest.mark.parametrize("data", [_X, _Z], ids=["real", "complex"])
def test_gradients_match_finite_differences(name, data):
    f = _TRANSFORMS[name]
    x = ember.tensor(data[:2, :4, :3], requires_grad=True)
    _real_loss(f(ember, x)).backward()
    base = data[:2, :4, :3]
    h, expected = 1e-6, np.zeros_like(base)
    for index in np.ndindex(base.shape):
        for direction in ((1.0, 1j) if np.iscomplexobj(base) else (1.0,)):
            step = np.zeros_like(base)
            step[index] = h * direction
            up = _real_loss(f(ember, ember.tensor(base + step))).item()
            down = _real_loss(f(ember, ember.tensor(base - step))).item()
            expected[index] += direction * (up - down) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
@pytest.mark.parametrize("data", [_X, _Z], ids=["real", "complex"])
def test_matches_pytorch(name, data):
    f = _TRANSFORMS[name]
    results = []
    for lib in (ember, torch):
        x = lib.tensor(data, requires_grad=True)
        y = f(lib, x)
        _real_loss(y).backward()
        grad = x.grad if lib is ember else x.grad.resolve_conj()
        results.append((y.detach().resolve_conj().numpy(), grad.numpy(), y.dtype.is_complex))
    (v1, g1, d1), (v2, g2, d2) = results
    assert d1 == d2
    np.testing.assert_allclose(v1, v2, atol=1e-10)
    np.testing.assert_allclose(g1, g2, atol=1e-10)
