"""stft / istft: the frames written out in NumPy, the round trip, gradients, PyTorch parity."""

import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

_X = np.random.default_rng(0).standard_normal((2, 50))


def _hann(lib, n):
    return lib.hann_window(n, dtype=lib.float64)


def test_stft_is_the_fft_of_windowed_frames():
    window = np.hanning(17)[:16]  # (a periodic Hann window)
    out = ember.stft(ember.tensor(_X), 16, hop_length=5, window=ember.tensor(window),
                     center=False, return_complex=True)
    frames = np.stack([_X[:, t * 5:t * 5 + 16] * window for t in range(1 + (50 - 16) // 5)], 1)
    np.testing.assert_allclose(out.numpy(), np.fft.rfft(frames, axis=-1).transpose(0, 2, 1),
                               atol=1e-12)
    assert ember.stft(ember.tensor(_X[0]), 16, window=_hann(ember, 16),
                      return_complex=True).shape == (9, 13)


def test_round_trip_and_lengths():
    x = ember.tensor(_X)
    for hop, win_length in ((4, 16), (5, 16), (4, 12)):
        window = _hann(ember, win_length)
        spec = ember.stft(x, 16, hop, win_length, window, return_complex=True)
        y = ember.istft(spec, 16, hop, win_length, window, length=50)
        np.testing.assert_allclose(y.numpy(), _X, atol=1e-12)
    spec = ember.stft(x, 16, window=_hann(ember, 16), return_complex=True)
    assert ember.istft(spec, 16, window=_hann(ember, 16)).shape == (2, 48)
    assert ember.istft(spec, 16, window=_hann(ember, 16), length=60).shape == (2, 60)


def test_gradients_match_finite_differences():
    window = _hann(ember, 8)

    def loss(x):
        spec = ember.stft(x, 8, hop_length=3, window=window, return_complex=True)
        return spec.abs().sum() + ember.istft(spec * 1j, 8, 3, window=window).pow(2).sum()

    x = ember.tensor(_X[:1, :20], requires_grad=True)
    assert ember.autograd.gradcheck(loss, (x,))


def test_errors_and_warnings():
    x = ember.tensor(_X)
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        ember.stft(x, 16)
    with pytest.warns(UserWarning, match="A window was not provided"):
        ember.stft(x, 16, return_complex=True)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        assert ember.stft(x, 16, window=_hann(ember, 16), return_complex=False).shape[-1] == 2
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        ember.istft(x, 16)
    spec = ember.stft(x, 16, window=_hann(ember, 16), center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="NOLA"):
        ember.istft(spec, 16, window=_hann(ember, 16), center=False)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("kwargs", [{}, {"hop_length": 5, "win_length": 12},
                                    {"normalized": True, "onesided": False},
                                    {"pad_mode": "constant"}, {"center": False}])
def test_matches_pytorch(kwargs):
    results = []
    for lib in (ember, torch):
        x = lib.tensor(_X, requires_grad=True)
        window = _hann(lib, kwargs.get("win_length", 16))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = lib.stft(x, 16, window=window, return_complex=True, **kwargs)
            back_kwargs = {k: v for k, v in kwargs.items() if k != "pad_mode"}
            if not kwargs.get("center", True):
                back = spec.abs().sum()  # (Hann with center=False fails NOLA in both)
            else:
                back = lib.istft(spec, 16, window=window, length=50, **back_kwargs).sum()
        (spec.abs().sum() + back).backward()
        results.append((spec.detach().resolve_conj().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, atol=1e-10)
