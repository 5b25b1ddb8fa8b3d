"""Dynamic quantization: quantize_dynamic and the dynamic quantized Linear, exact against a
NumPy reference, close to PyTorch, and accurate on a small trained model."""

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.ao import quantization as Q
from ember.ao.nn.quantized.dynamic import Linear as DynamicLinear

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _choose_qparams_ref(lo, hi, qmin=0, qmax=127):
    """The activation parameters, written out again for the reference."""
    lo, hi = min(np.float32(lo), 0.0), max(np.float32(hi), 0.0)
    scale = float(np.float32(hi - lo)) / (qmax - qmin)
    zp_min, zp_max = qmin - lo / scale, qmax - hi / scale
    err_min, err_max = abs(qmin) - abs(lo / scale), abs(qmax) - abs(hi / scale)
    zp = zp_min if err_min < err_max else zp_max
    return np.float32(scale), int(min(max(np.rint(zp), qmin), qmax))


def _reference(x, w, b):
    """int8 weight (per-tensor symmetric), uint8 activation (0..127), integer matmul."""
    w_scale = np.maximum(np.float32(max(-min(w.min(), 0), max(w.max(), 0))) /
                         np.float32(127.5), np.float32(np.finfo(np.float32).eps))
    wq = np.clip(np.rint((w.astype(np.float64) * np.float64(np.float32(1) / w_scale))
                         .astype(np.float32)), -128, 127)
    x_scale, x_zp = _choose_qparams_ref(x.min(), x.max())
    xq = np.clip(np.rint((x.astype(np.float64) * np.float64(np.float32(1) / x_scale) + x_zp)
                         .astype(np.float32)), 0, 127)
    acc = np.zeros((x.shape[0], w.shape[0]), np.int64)
    for i in range(x.shape[0]):          # integer arithmetic, no floats
        acc[i] = ((xq[i].astype(np.int64) - x_zp)[None, :] * wq.astype(np.int64)).sum(1)
    return acc.astype(np.float32) * (x_scale * w_scale) + b


def _model(seed=0, fin=20, hidden=32, fout=5):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(fin, hidden), nn.ReLU(),
                         nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()),
                         nn.Linear(hidden, fout))


def test_swaps_every_linear_and_keeps_the_original():
    model = _model()
    q = Q.quantize_dynamic(model, {nn.Linear}, dtype=ember.qint8)
    assert type(model[0]) is nn.Linear          # not in place
    assert [type(m).__name__ for m in (q[0], q[2][0], q[3])] == ["Linear"] * 3
    assert all(isinstance(m, DynamicLinear) for m in (q[0], q[2][0], q[3]))
    assert isinstance(q[1], nn.ReLU)
    assert "DynamicQuantizedLinear(in_features=20, out_features=32, dtype=ember.qint8" in repr(q)
    assert q[0].weight().dtype is ember.qint8
    assert q[0].weight().qscheme() is ember.per_tensor_affine
    inplace = Q.quantize_dynamic(model, inplace=True)
    assert inplace is model and isinstance(model[0], DynamicLinear)
    assert ember.nn.quantized.dynamic.Linear is DynamicLinear


def test_spec_by_name_and_errors():
    q = Q.quantize_dynamic(_model(), {"2": Q.default_dynamic_qconfig})
    assert isinstance(q[2][0], DynamicLinear) and type(q[0]) is nn.Linear
    with pytest.raises(NotImplementedError, match="LSTM"):
        Q.quantize_dynamic(_model(), {nn.LSTM})
    with pytest.raises(NotImplementedError, match="dtype"):
        Q.quantize_dynamic(_model(), dtype=ember.quint8)


@pytest.mark.parametrize("seed", range(5))
def test_matches_integer_reference_exactly(seed):
    rng = np.random.default_rng(seed)
    fin, fout = rng.integers(3, 50), rng.integers(1, 30)
    lin = nn.Linear(int(fin), int(fout))
    x = (rng.standard_normal((7, fin)) * 2 + rng.uniform(-1, 1)).astype(np.float32)
    q = Q.quantize_dynamic(nn.Sequential(lin))[0]
    expected = _reference(x, lin.weight.detach().numpy(), lin.bias.detach().numpy())
    np.testing.assert_array_equal(q(ember.tensor(x)).numpy(), expected)


def test_forward_only():
    q = Q.quantize_dynamic(_model())
    x = ember.randn(4, 20, requires_grad=True)
    y = q(x)
    assert y.shape == (4, 5) and y.grad_fn is None and not y.requires_grad
    assert y.dtype is ember.float32


def test_per_channel_weights():
    lin = nn.Linear(10, 4)
    qconfig = Q.QConfig(activation=Q.default_dynamic_quant_observer,
                        weight=Q.default_per_channel_weight_observer)
    q = Q.quantize_dynamic(nn.Sequential(lin), {nn.Linear: qconfig})[0]
    assert q.weight().qscheme() is ember.per_channel_affine
    x = ember.randn(3, 10)
    np.testing.assert_allclose(q(x).numpy(), lin(x).detach().numpy(), atol=0.05)


def test_trained_mlp_keeps_its_accuracy():
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((5, 20)).astype(np.float32) * 2
    labels = rng.integers(0, 5, 2000)
    data = (centers[labels] + rng.standard_normal((2000, 20)).astype(np.float32))
    model = _model(1)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    x, y = ember.tensor(data), ember.tensor(labels)
    for _ in range(150):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    q = Q.quantize_dynamic(model)
    test = ember.tensor((rng.standard_normal((1000, 20)) * 2.5).astype(np.float32))
    with ember.no_grad():
        agree = (model(test).argmax(1) == q(test).argmax(1)).float().mean().item()
    accuracy = (q(x).argmax(1) == y).float().mean().item()
    float_accuracy = (model(x).argmax(1) == y).float().mean().item()
    assert agree >= 0.95
    assert accuracy >= float_accuracy - 0.02


def test_deepcopy_and_state():
    q = Q.quantize_dynamic(_model())
    q2 = copy.deepcopy(q)
    x = ember.randn(2, 20)
    np.testing.assert_array_equal(q(x).numpy(), q2(x).numpy())


@needs_torch
def test_close_to_torch_quantize_dynamic():
    """Same integer weights and activation parameters as PyTorch; outputs agree to float32
    rounding (PyTorch's kernel orders the final scale-and-bias arithmetic differently)."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(30):
        fin, fout = int(rng.integers(3, 70)), int(rng.integers(1, 40))
        w = (rng.standard_normal((fout, fin)) * rng.uniform(0.05, 2)).astype(np.float32)
        b = rng.standard_normal(fout).astype(np.float32)
        x = (rng.standard_normal((int(rng.integers(1, 20)), fin)) * rng.uniform(0.1, 5)
             + rng.uniform(-2, 2)).astype(np.float32)
        tl = torch.nn.Linear(fin, fout)
        tl.weight.data, tl.bias.data = torch.from_numpy(w), torch.from_numpy(b)
        tq = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(tl), {torch.nn.Linear},
                                                    dtype=torch.qint8)[0]
        el = nn.Linear(fin, fout)
        el.weight.data, el.bias.data = ember.tensor(w), ember.tensor(b)
        eq = Q.quantize_dynamic(nn.Sequential(el))[0]
        np.testing.assert_array_equal(eq.weight().int_repr().numpy(),
                                      tq.weight().int_repr().numpy())
        assert eq.weight().q_scale() == tq.weight().q_scale()
        ty = tq(torch.from_numpy(x)).detach().numpy()
        ey = eq(ember.tensor(x)).numpy()
        worst = max(worst, float(np.abs(ty - ey).max() / np.abs(ty).max()))
    assert worst < 1e-6, worst
