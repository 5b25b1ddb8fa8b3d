"""APIs outside the op table on a CUDA device, each checked against the CPU: FFTs,
distributions, sparse tensors, packed sequences, complex and bfloat16 arithmetic,
channels-last convolutions, tracing, the profiler, DLPack and the errors a GPU tensor
gives where NumPy cannot follow.  Runs only where CuPy sees a GPU.

Written after the first GPU runs (2026-12-04); first run on a GPU in the second
session's runs 4 and 5 (docs/gpu.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.testing import assert_close

pytestmark = pytest.mark.cuda


def _pair(array: np.ndarray, requires_grad: bool = False):
    """The same values as a CPU tensor and as a CUDA tensor."""
    return (ember.tensor(array, requires_grad=requires_grad),
            ember.tensor(array, device="cuda", requires_grad=requires_grad))


def _same(gpu, cpu, **tolerances) -> None:
    assert gpu.device.type == "cuda"
    assert_close(gpu.cpu(), cpu, **tolerances)


def test_fft_values_and_gradients():
    rng = np.random.default_rng(0)
    cpu, gpu = _pair(rng.standard_normal((4, 16)), requires_grad=True)
    results = []
    for x in (cpu, gpu):
        spectrum = ember.fft.rfft(x, dim=-1)
        full = ember.fft.fft2(x.to(ember.complex128))
        back = ember.fft.irfft(spectrum, n=16, dim=-1)
        loss = spectrum.abs().sum() + full.real.sum() + back.pow(2).sum()
        loss.backward()
        results.append((spectrum.detach(), full.detach(), back.detach(), x.grad))
    for got, want in zip(results[1], results[0]):
        _same(got, want, rtol=1e-10, atol=1e-10)


def test_distributions_sample_and_score():
    ember.manual_seed(0)
    loc_c, loc_g = _pair(np.array([0.5, -1.0]), requires_grad=True)
    for loc in (loc_c, loc_g):
        normal = ember.distributions.Normal(loc, 2.0)
        sample = normal.rsample((20000,))
        assert sample.device == loc.device
        # the sample's mean is the location, within 4 standard errors
        assert np.all(np.abs(sample.mean(0).detach().cpu().numpy() - [0.5, -1.0]) < 0.06)
        normal.log_prob(ember.zeros(2, device=loc.device, dtype=loc.dtype)).sum().backward()
    _same(loc_g.grad, loc_c.grad, rtol=1e-12)
    cat = ember.distributions.Categorical(probs=ember.tensor([0.2, 0.8], device="cuda"))
    assert cat.sample((10,)).device.type == "cuda"
    _same(cat.entropy(), ember.distributions.Categorical(
        probs=ember.tensor([0.2, 0.8])).entropy(), rtol=1e-6)


def test_sparse_tensors():
    indices = np.array([[0, 1, 1], [2, 0, 2]])
    values = np.array([3.0, 4.0, 5.0])
    dense = np.random.default_rng(1).standard_normal((3, 2))
    results = []
    for device in ("cpu", "cuda"):
        s = ember.sparse_coo_tensor(ember.tensor(indices, device=device),
                                    ember.tensor(values, device=device), (2, 3))
        assert s.device.type == device and s.is_sparse
        d = ember.tensor(dense, device=device, requires_grad=True)
        product = ember.sparse.mm(s, d)
        product.sum().backward()
        results.append((s.to_dense(), product.detach(), d.grad))
    for got, want in zip(results[1], results[0]):
        _same(got, want, rtol=1e-12)


def test_packed_sequences_through_an_lstm():
    ember.manual_seed(0)
    lstm = nn.LSTM(3, 4, batch_first=True).double()
    copy = nn.LSTM(3, 4, batch_first=True).double()
    copy.load_state_dict(lstm.state_dict())
    copy.cuda()
    x = np.random.default_rng(2).standard_normal((3, 5, 3))
    lengths = [5, 3, 2]
    outs = []
    for model, device in ((lstm, "cpu"), (copy, "cuda")):
        packed = nn.utils.rnn.pack_padded_sequence(ember.tensor(x, device=device), lengths,
                                                   batch_first=True)
        out, (h, _) = model(packed)
        padded, sizes = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        assert sizes.tolist() == lengths
        outs.append((padded, h))
    for got, want in zip(outs[1], outs[0]):
        _same(got.detach(), want.detach(), rtol=1e-10, atol=1e-12)


def test_complex_and_bfloat16_arithmetic():
    rng = np.random.default_rng(3)
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    zc, zg = _pair(z)
    _same(zg @ zg.conj().T, zc @ zc.conj().T, rtol=1e-12)
    _same(ember.view_as_real(zg), ember.view_as_real(zc))
    _same(zg.abs(), zc.abs(), rtol=1e-12)
    a = rng.standard_normal(8).astype(np.float32)
    bc, bg = ember.tensor(a, dtype=ember.bfloat16), ember.tensor(a, dtype=ember.bfloat16,
                                                                  device="cuda")
    assert bg.dtype == ember.bfloat16
    _same(bg * 2 + 1, bc * 2 + 1)


def test_bfloat16_ops_with_numbers_and_gradients():
    # numbers become bfloat16 arrays on the tensor's device (CuPy takes no NumPy operand)
    a = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        x = ember.tensor(a, dtype=ember.bfloat16, device=device, requires_grad=True)
        y = (3 - x) / 2
        y = ember.where(x > 0, y, 0.5).clamp(-1, 1).addcmul(x, x, value=0.25)
        z = (y @ x.T).relu().sum() + F.softmax(x, dim=-1).sum()
        z.backward()
        results.append((y.detach(), z.detach(), x.grad))
    for got, want in zip(results[1], results[0]):
        assert got.dtype == ember.bfloat16
        _same(got, want, rtol=2e-2, atol=2e-2)


def test_channels_last_convolution():
    ember.manual_seed(0)
    conv = nn.Conv2d(3, 5, 3, padding=1).double()
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 6))
    want = conv(ember.tensor(x))
    conv.cuda()
    xg = ember.tensor(x, device="cuda").to(memory_format=ember.channels_last)
    assert xg.is_contiguous(memory_format=ember.channels_last)
    _same(conv(xg).detach(), want.detach(), rtol=1e-10, atol=1e-12)


def test_traced_module_replays_on_cuda():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).cuda()
    x = ember.randn(3, 4, device="cuda")
    traced = ember.jit.trace(model, x)
    y = ember.randn(5, 4, device="cuda")
    _same(traced(y).detach(), model(y).detach().cpu(), rtol=1e-6)


def test_profiler_records_gpu_ops():
    x = ember.randn(64, 64, device="cuda")
    with ember.profiler.profile() as prof:
        (x @ x).relu().sum()
    names = {event.key for event in prof.key_averages()}
    assert {"mm", "relu", "sum"} & names


def test_dlpack_round_trip_with_cupy():
    import cupy

    x = ember.arange(6.0, device="cuda").reshape(2, 3)
    array = cupy.from_dlpack(x)                       # the tensor's own __dlpack__
    assert array.shape == (2, 3) and float(array.sum()) == 15.0
    back = ember.utils.dlpack.from_dlpack(array)
    assert back.device.type == "cuda" and back.tolist() == x.tolist()


def test_gpu_tensors_refuse_numpy_and_mixed_devices():
    x = ember.ones(3, device="cuda")
    with pytest.raises(TypeError):
        x.numpy()
    assert "cuda:0" in repr(x)
    with pytest.raises(RuntimeError, match="cuda.*cpu|cpu.*cuda"):
        ember.cat([x, ember.ones(3)])
    with pytest.raises(RuntimeError, match="cuda.*cpu|cpu.*cuda"):
        F.linear(x, ember.ones(2, 3))
