"""ember.fft: PyTorch's ``torch.fft`` namespace (re-exports of ``ember/ops/fft.py``)."""

from .ops.fft import (
    fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift,
    ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn,
)

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
           "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
