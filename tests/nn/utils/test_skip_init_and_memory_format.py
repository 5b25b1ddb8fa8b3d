"""nn.utils.skip_init and convert_conv{2,3}d_weight_memory_format."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import (
    convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format, skip_init,
)


@pytest.mark.parametrize("cls, args, kwargs", [
    (nn.Linear, (5, 3), {}),
    (nn.Conv2d, (3, 4, 3), {"bias": False}),
    (nn.BatchNorm1d, (6,), {"dtype": ember.float64}),
    (nn.Linear, (2, 2), {"device": "cpu", "dtype": ember.float64}),
])
def test_skip_init_shapes_and_dtypes(cls, args, kwargs):
    ember.manual_seed(0)
    fresh = cls(*args, **kwargs)
    skipped = skip_init(cls, *args, **kwargs)
    assert type(skipped) is cls
    ours = dict(skipped.state_dict())
    assert list(ours) == list(fresh.state_dict())
    for name, value in fresh.state_dict().items():
        assert ours[name].shape == value.shape and ours[name].dtype == value.dtype
        assert ours[name].device == value.device
    params = list(skipped.parameters())
    assert len(params) == len(list(fresh.parameters()))
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)


class NoDevice(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(ember.ones(features))


def test_skip_init_errors():
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        skip_init(NoDevice, 3)
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        skip_init(int, 3)


def test_skip_init_errors_match_torch():
    torch = pytest.importorskip("torch")

    class TorchNoDevice(torch.nn.Module):
        def __init__(self, features):
            super().__init__()

    with pytest.raises(RuntimeError) as theirs:
        torch.nn.utils.skip_init(TorchNoDevice, 3)
    with pytest.raises(RuntimeError) as ours:
        skip_init(NoDevice, 3)
    assert str(ours.value) == str(theirs.value)


def _convs(lib, three_d):
    nn_ = lib.nn
    if three_d:
        return nn_.Sequential(nn_.Conv3d(2, 4, 3), nn_.ReLU(),
                              nn_.Sequential(nn_.ConvTranspose3d(4, 3, 2)), nn_.Conv2d(3, 3, 1))
    return nn_.Sequential(nn_.Conv2d(2, 4, 3), nn_.ReLU(),
                          nn_.Sequential(nn_.ConvTranspose2d(4, 3, 2)), nn_.Conv3d(3, 3, 1),
                          nn_.Linear(3, 3))


@pytest.mark.parametrize("three_d", [False, True])
def test_weight_strides_match_torch(three_d):
    torch = pytest.importorskip("torch")
    ours, theirs = _convs(ember, three_d), _convs(torch, three_d)
    if three_d:
        convert_conv3d_weight_memory_format(ours, ember.channels_last_3d)
        torch.nn.utils.convert_conv3d_weight_memory_format(theirs, torch.channels_last_3d)
    else:
        assert convert_conv2d_weight_memory_format(ours, ember.channels_last) is ours
        torch.nn.utils.convert_conv2d_weight_memory_format(theirs, torch.channels_last)
    our_strides = [p.stride() for p in ours.parameters()]
    assert our_strides == [tuple(p.stride()) for p in theirs.parameters()]


def test_conversion_keeps_parameters_and_outputs():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.ConvTranspose2d(4, 2, 2))
    weights = [p for p in model.parameters()]
    x = ember.randn(2, 3, 8, 8)
    before = model(x).detach().numpy()
    convert_conv2d_weight_memory_format(model, ember.channels_last)
    assert [p for p in model.parameters()] == weights
    assert model[0].weight.is_contiguous(memory_format=ember.channels_last)
    assert not model[0].weight.is_contiguous()
    np.testing.assert_allclose(model(x).detach().numpy(), before, rtol=1e-5, atol=1e-6)
    model(x).sum().backward()
    assert model[0].weight.grad.shape == model[0].weight.shape
    convert_conv2d_weight_memory_format(model, ember.contiguous_format)
    assert model[0].weight.is_contiguous()

    conv = nn.Conv3d(2, 3, 2)
    x3 = ember.randn(1, 2, 4, 4, 4)
    before = conv(x3).detach().numpy()
    convert_conv3d_weight_memory_format(conv, ember.channels_last_3d)
    assert conv.weight.is_contiguous(memory_format=ember.channels_last_3d)
    np.testing.assert_allclose(conv(x3).detach().numpy(), before, rtol=1e-5, atol=1e-6)
