"""Observers: hand-derived quantization parameters, and bit-for-bit parity with PyTorch's
observers across schemes, dtypes and reduce_range."""

import numpy as np
import pytest

import ember
from ember.ao import quantization as Q

try:
    import torch
    from torch.ao import quantization as TQ
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def test_minmax_affine_by_hand():
    obs = Q.MinMaxObserver()
    out = obs(ember.tensor([-1.0, 3.0]))
    assert out.tolist() == [-1.0, 3.0]
    obs(ember.tensor([0.5, 2.0]))
    assert obs.min_val.item() == -1.0 and obs.max_val.item() == 3.0
    scale, zp = obs.calculate_qparams()
    expected_scale = np.float32(4.0) / np.float32(255)
    assert scale.dtype is ember.float32 and zp.dtype is ember.int32 and scale.shape == (1,)
    assert scale.item() == expected_scale
    assert zp.item() == 0 - int(np.rint(np.float32(-1.0) / expected_scale))  # 64


def test_minmax_symmetric_by_hand():
    obs = Q.MinMaxObserver(dtype=ember.qint8, qscheme=ember.per_tensor_symmetric)
    obs(ember.tensor([-2.0, 1.0]))
    scale, zp = obs.calculate_qparams()
    assert scale.item() == np.float32(2.0) / np.float32(127.5) and zp.item() == 0
    obs = Q.MinMaxObserver(dtype=ember.quint8, qscheme=ember.per_tensor_symmetric)
    obs(ember.tensor([-2.0, 1.0]))
    assert obs.calculate_qparams()[1].item() == 128


def test_ranges_and_reduce_range():
    assert (Q.MinMaxObserver(reduce_range=True).quant_min,
            Q.MinMaxObserver(reduce_range=True).quant_max) == (0, 127)
    obs = Q.MinMaxObserver(dtype=ember.qint8, reduce_range=True)
    assert (obs.quant_min, obs.quant_max) == (-64, 63)
    obs = Q.MinMaxObserver(quant_min=0, quant_max=15)
    assert (obs.quant_min, obs.quant_max) == (0, 15)
    with pytest.raises(NotImplementedError):
        Q.MinMaxObserver(qscheme=ember.per_tensor_symmetric, reduce_range=True)


def test_moving_average_by_hand():
    obs = Q.MovingAverageMinMaxObserver(averaging_constant=0.5)
    obs(ember.tensor([-1.0, 1.0]))
    obs(ember.tensor([-3.0, 5.0]))
    assert obs.min_val.item() == -2.0 and obs.max_val.item() == 3.0


def test_per_channel_by_hand():
    obs = Q.PerChannelMinMaxObserver(ch_axis=1, dtype=ember.qint8,
                                     qscheme=ember.per_channel_symmetric)
    obs(ember.tensor([[1.0, -4.0], [-2.0, 0.5]]))
    assert obs.min_val.tolist() == [-2.0, -4.0] and obs.max_val.tolist() == [1.0, 0.5]
    scale, zp = obs.calculate_qparams()
    assert scale.tolist() == [np.float32(2.0) / np.float32(127.5),
                              np.float32(4.0) / np.float32(127.5)]
    assert zp.tolist() == [0, 0]


def test_unobserved_warns_and_defaults():
    with pytest.warns(UserWarning, match="must run observer"):
        scale, zp = Q.MinMaxObserver().calculate_qparams()
    assert scale.tolist() == [1.0] and zp.tolist() == [0]


def test_with_args_and_qconfig():
    factory = Q.MinMaxObserver.with_args(dtype=ember.qint8)
    assert factory().dtype is ember.qint8 and factory() is not factory()
    qc = Q.get_default_qconfig("x86")
    assert qc.weight().qscheme is ember.per_channel_symmetric
    assert qc.activation().quant_max == 127
    assert Q.default_dynamic_qconfig.weight().qscheme is ember.per_tensor_symmetric
    with pytest.raises(ValueError, match="observer instance"):
        Q.QConfig(activation=Q.MinMaxObserver(), weight=Q.MinMaxObserver)
    with pytest.raises(NotImplementedError, match="qnnpack"):
        Q.get_default_qconfig("qnnpack")
    assert ember.quantization.quantize_dynamic is Q.quantize_dynamic


# --- parity with PyTorch ---------------------------------------------------------------

_CONFIGS = [
    dict(dtype="quint8", qscheme="per_tensor_affine", reduce_range=False),
    dict(dtype="quint8", qscheme="per_tensor_affine", reduce_range=True),
    dict(dtype="qint8", qscheme="per_tensor_affine", reduce_range=False),
    dict(dtype="qint8", qscheme="per_tensor_affine", reduce_range=True),
    dict(dtype="qint8", qscheme="per_tensor_symmetric", reduce_range=False),
    dict(dtype="qint8", qscheme="per_tensor_symmetric", reduce_range=True),
    dict(dtype="quint8", qscheme="per_tensor_symmetric", reduce_range=False),
    dict(dtype="quint8", qscheme="per_tensor_affine", quant_min=0, quant_max=15),
    dict(dtype="qint8", qscheme="per_tensor_symmetric", quant_min=-8, quant_max=7),
]


def _kwargs(lib, config, per_channel=False):
    kw = dict(config)
    kw["dtype"] = getattr(lib, kw["dtype"])
    scheme = kw["qscheme"].replace("per_tensor", "per_channel") if per_channel \
        else kw["qscheme"]
    kw["qscheme"] = getattr(lib, scheme)
    return kw


def _batches(seed, shape=(4, 37)):
    rng = np.random.default_rng(seed)
    shifts = [0.0, 0.7, -1.3, 2.0, 0.0]
    return [(rng.standard_normal(shape) * (i + 1) * 0.8 + s).astype(np.float32)
            for i, s in enumerate(shifts)] + [np.abs(rng.standard_normal(shape)).astype(
                np.float32)]


def _assert_same_qparams(ours, theirs):
    s, z = ours.calculate_qparams()
    ts, tz = theirs.calculate_qparams()
    np.testing.assert_array_equal(s.numpy(), ts.numpy())
    np.testing.assert_array_equal(z.numpy(), tz.numpy())
    assert repr(z.dtype).split(".")[1] == str(tz.dtype).split(".")[1]


@needs_torch
@pytest.mark.parametrize("name", ["MinMaxObserver", "MovingAverageMinMaxObserver"])
@pytest.mark.parametrize("config", _CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("seed", range(4))
def test_per_tensor_observers_match_torch(name, config, seed):
    ours = getattr(Q, name)(**_kwargs(ember, config))
    theirs = getattr(TQ, name)(**_kwargs(torch, config))
    assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)
    for batch in _batches(seed):
        ours(ember.tensor(batch))
        theirs(torch.from_numpy(batch))
        np.testing.assert_array_equal(ours.min_val.numpy(), theirs.min_val.numpy())
        np.testing.assert_array_equal(ours.max_val.numpy(), theirs.max_val.numpy())
        _assert_same_qparams(ours, theirs)


@needs_torch
@pytest.mark.parametrize("name", ["PerChannelMinMaxObserver",
                                  "MovingAveragePerChannelMinMaxObserver"])
@pytest.mark.parametrize("config", _CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("ch_axis", [0, 1, -1])
def test_per_channel_observers_match_torch(name, config, ch_axis):
    ours = getattr(Q, name)(ch_axis=ch_axis, **_kwargs(ember, config, True))
    theirs = getattr(TQ, name)(ch_axis=ch_axis, **_kwargs(torch, config, True))
    for batch in _batches(ch_axis + 7, (3, 5, 6)):
        ours(ember.tensor(batch))
        theirs(torch.from_numpy(batch))
        _assert_same_qparams(ours, theirs)


@needs_torch
def test_default_qconfigs_match_torch():
    for backend in ("x86", "fbgemm"):
        ours, theirs = Q.get_default_qconfig(backend), TQ.get_default_qconfig(backend)
        w, tw = ours.weight(), theirs.weight()
        assert (w.quant_min, w.quant_max, w.qscheme.name, w.dtype.name) == (
            tw.quant_min, tw.quant_max, str(tw.qscheme).split(".")[1],
            str(tw.dtype).split(".")[1])
        a, ta = ours.activation(), theirs.activation()
        assert (a.quant_min, a.quant_max) == (ta.quant_min, ta.quant_max)
        ours, theirs = Q.get_default_qat_qconfig(backend), TQ.get_default_qat_qconfig(backend)
        for mine, ref in ((ours.activation(), theirs.activation()),
                          (ours.weight(), theirs.weight())):
            assert (mine.quant_min, mine.quant_max) == (ref.quant_min, ref.quant_max)
            assert mine.qscheme.name == str(ref.qscheme).split(".")[1]
