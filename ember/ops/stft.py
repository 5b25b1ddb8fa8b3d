"""The short-time Fourier transform and its inverse (``torch.stft`` / ``torch.istft``).

`stft` cuts the signal into frames of `n_fft` samples every `hop_length`, multiplies
each by the window (zero-padded to `n_fft` around its middle) and takes its FFT: the
result is (frequencies, frames).  `istft` inverts each frame, overlap-adds the windowed
frames and divides by the overlap-added squared window.  Both are written with ember ops
(unfold, FFT, index_add), so they are differentiable.
"""

from __future__ import annotations

import warnings

from .._core.tensor import Tensor
from . import fft as fft_ops
from .complex import view_as_real
from .creation import arange, ones, zeros
from .padding import pad as pad_fn


def _frame_window(op: str, n_fft: int, win_length, window, like: Tensor, warn: str) -> Tensor:
    """The window, zero-padded on both sides to `n_fft` samples."""
    win_length = n_fft if win_length is None else win_length
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is None:
        warnings.warn(warn, UserWarning, stacklevel=3)
        window = ones(win_length, dtype=like.real.dtype if like.is_complex() else like.dtype,
                      device=like.device)
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    left = (n_fft - win_length) // 2
    return pad_fn(window, [left, n_fft - win_length - left]) if win_length < n_fft else window


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a 1-D signal or a batch of them (B, L): a
    complex tensor (B, n_fft // 2 + 1, frames) (all n_fft bins when not `onesided`)."""
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    if return_complex is None:
        if not input.is_complex() and (window is None or not window.is_complex()):
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    hop_length = n_fft // 4 if hop_length is None else hop_length
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    window = _frame_window("stft", n_fft, win_length, window, input,
                           "A window was not provided. A rectangular window will be applied, "
                           "which is known to cause spectral leakage.")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    if center:
        half = n_fft // 2
        x = pad_fn(x.unsqueeze(1), [half, half], mode=pad_mode).squeeze(1)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop_length) * window        # (B, frames, n_fft)
    onesided = not (input.is_complex() or window.is_complex()) if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    spectrum = fft_ops.rfft(frames, dim=-1, norm=norm) if onesided else \
        fft_ops.fft(frames, dim=-1, norm=norm)
    out = spectrum.transpose(-1, -2)
    if input.dim() == 1:
        out = out.squeeze(0)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.", UserWarning, stacklevel=2)
        return view_as_real(out)
    return out


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of `stft`: the signal whose short-time transform is `input` (complex,
    (B, frequencies, frames) or without B), by windowed overlap-add."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.dim()}")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    spectrum = input.unsqueeze(0) if input.dim() == 2 else input
    onesided = spectrum.shape[1] != n_fft if onesided is None else onesided
    expected = n_fft // 2 + 1 if onesided else n_fft
    if spectrum.shape[1] != expected:
        raise RuntimeError(f"istft: expected the frequency dimension (2nd to last) of the "
                           f"input to equal {expected}, but got {spectrum.shape[1]}")
    window = _frame_window("istft", n_fft, win_length, window, input,
                           "A window was not provided. A rectangular window will be applied. "
                           "Please provide the same window used by stft to make the inversion "
                           "lossless.")
    norm = "ortho" if normalized else "backward"
    columns = spectrum.transpose(1, 2)                          # (B, frames, bins)
    if onesided:
        frames = fft_ops.irfft(columns, n=n_fft, dim=-1, norm=norm)
    else:
        frames = fft_ops.ifft(columns, dim=-1, norm=norm)
        if not return_complex:
            frames = frames.real
    frames = frames * window
    n_frames = frames.shape[1]
    total = n_fft + hop_length * (n_frames - 1)
    # where each frame sample lands in the signal: frame t, sample k -> t * hop + k
    positions = (arange(n_frames).unsqueeze(1) * hop_length + arange(n_fft)).flatten()
    batch = frames.shape[0]
    signal = zeros(batch, total, dtype=frames.dtype, device=frames.device)
    signal = signal.index_add(1, positions, frames.reshape(batch, -1))
    envelope = zeros(total, dtype=window.dtype, device=window.device)
    envelope = envelope.index_add(0, positions, (window * window).repeat(n_frames))
    start = n_fft // 2 if center else 0
    end = total if length is None and not center else (
        start + length if length is not None else total - n_fft // 2)
    signal, envelope = signal[:, start:end], envelope[start:end]
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError("istft: window overlap add min: the window and hop length do not "
                           "satisfy the nonzero overlap-add condition (NOLA)")
    signal = signal / envelope
    if length is not None and signal.shape[-1] < length:
        signal = pad_fn(signal, [0, length - signal.shape[-1]])
    return signal.squeeze(0) if input.dim() == 2 else signal
