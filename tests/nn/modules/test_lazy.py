"""Lazy modules: shapes from the first input, then the ordinary layer."""

import math

import pytest

import ember
from ember import nn
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.parameter import is_lazy

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_lazy_linear_infers_in_features_initializes_and_becomes_linear():
    layer = nn.LazyLinear(4)
    assert layer.has_uninitialized_params() and is_lazy(layer.weight)
    assert isinstance(layer.weight, nn.UninitializedParameter)
    out = layer(ember.randn(3, 7))
    assert out.shape == (3, 4) and type(layer) is nn.Linear
    assert layer.in_features == 7 and layer.weight.shape == (4, 7)
    assert type(layer.weight) is nn.Parameter and not is_lazy(layer.weight)
    bound = 1 / math.sqrt(7)  # kaiming_uniform_(a=sqrt(5)) and the bias rule of Linear
    assert float(layer.weight.abs().max()) <= bound and float(layer.bias.abs().max()) <= bound
    assert len(layer._forward_pre_hooks) == 0  # the inference hook is gone
    assert nn.LazyLinear(2, bias=False)(ember.ones(1, 3)).shape == (1, 2)


def test_lazy_convolutions_and_batch_norm_in_a_model_that_trains():
    ember.manual_seed(0)
    model = nn.Sequential(nn.LazyConv2d(8, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                          nn.Flatten(), nn.LazyLinear(2))
    x, y = ember.randn(4, 3, 5, 5), ember.tensor([0, 1, 0, 1])
    model(x)  # the first call fixes the shapes
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten",
                                                  "Linear"]
    assert model[0].weight.shape == (8, 3, 3, 3) and model[1].running_var.shape == (8,)
    assert model[4].weight.shape == (2, 200)
    assert sorted(model.state_dict()) == [
        "0.bias", "0.weight", "1.bias", "1.num_batches_tracked", "1.running_mean",
        "1.running_var", "1.weight", "4.bias", "4.weight"]
    opt = ember.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.5


def test_lazy_transposed_and_grouped_convolutions():
    deconv = nn.LazyConvTranspose2d(4, 3, stride=2, groups=2)
    assert deconv(ember.randn(1, 6, 4, 4)).shape == (1, 4, 9, 9)
    assert deconv.weight.shape == (6, 2, 3, 3) and deconv.in_channels == 6
    conv1 = nn.LazyConv1d(5, 2)
    assert conv1(ember.randn(3, 8)).shape == (5, 7)  # unbatched input
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 1, groups=2)(ember.randn(1, 3, 2, 2))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_structure_matches_pytorch():
    def build(lib):
        m = lib.nn.Sequential(lib.nn.LazyConv1d(4, 3), lib.nn.LazyBatchNorm1d(),
                              lib.nn.Flatten(), lib.nn.LazyLinear(3))
        before = repr(m)
        m(lib.ones(2, 5, 6))
        return before, repr(m), sorted(m.state_dict()), [tuple(p.shape) for p in m.parameters()]
    assert build(ember) == build(torch)


def test_lazy_instance_norm_infers_features_for_batched_and_unbatched_inputs():
    for cls, batched, unbatched in ((nn.LazyInstanceNorm1d, (2, 3, 5), (4, 6)),
                                    (nn.LazyInstanceNorm2d, (2, 3, 4, 4), (5, 4, 4)),
                                    (nn.LazyInstanceNorm3d, (1, 3, 2, 2, 2), (2, 2, 2, 2))):
        m = cls()
        x = ember.randn(*batched)
        y = m(x)
        assert type(m) is cls.cls_to_become and m.num_features == batched[1]
        mean = x.mean(tuple(range(2, x.dim())), keepdim=True)
        var = x.var(tuple(range(2, x.dim())), unbiased=False, keepdim=True)
        assert ember.allclose(y, (x - mean) / (var + 1e-5).sqrt(), atol=1e-5)
        assert m.running_mean.shape == (batched[1],)
        assert cls()(ember.randn(*unbatched)).shape == unbatched
        m = cls()
        m(ember.randn(*unbatched))
        assert m.num_features == unbatched[0]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_lazy_instance_norm_matches_pytorch():
    x = ember.randn(2, 3, 5, 5)
    for kwargs in ({}, {"affine": False}, {"affine": False, "track_running_stats": False}):
        m, t = nn.LazyInstanceNorm2d(**kwargs), torch.nn.LazyInstanceNorm2d(**kwargs)
        y, ty = m(x), t(torch.tensor(x.numpy()))
        assert repr(m) == repr(t).replace("torch", "ember")
        assert sorted(m.state_dict()) == sorted(t.state_dict())
        assert abs(y.detach().numpy() - ty.detach().numpy()).max() < 1e-5


def test_every_lazy_class_is_its_layer_with_one_shared_mechanism():
    lazy = {nn.LazyLinear: nn.Linear, nn.LazyConv1d: nn.Conv1d, nn.LazyConv2d: nn.Conv2d,
            nn.LazyConv3d: nn.Conv3d, nn.LazyConvTranspose1d: nn.ConvTranspose1d,
            nn.LazyConvTranspose2d: nn.ConvTranspose2d,
            nn.LazyConvTranspose3d: nn.ConvTranspose3d, nn.LazyBatchNorm1d: nn.BatchNorm1d,
            nn.LazyBatchNorm2d: nn.BatchNorm2d, nn.LazyBatchNorm3d: nn.BatchNorm3d,
            nn.LazyInstanceNorm1d: nn.InstanceNorm1d, nn.LazyInstanceNorm2d: nn.InstanceNorm2d,
            nn.LazyInstanceNorm3d: nn.InstanceNorm3d}
    for cls, layer in lazy.items():
        assert cls.__name__ == cls.__qualname__ == "Lazy" + layer.__name__
        assert cls.cls_to_become is layer
        assert issubclass(cls, LazyModuleMixin) and issubclass(cls, layer)
        assert layer.__name__ in cls.__doc__ and cls.size_attr in cls.__doc__
        assert getattr(ember.nn.modules.lazy, cls.__name__) is cls  # pickled by name


@pytest.mark.parametrize("kwargs", [{}, {"affine": False},
                                    {"affine": False, "track_running_stats": False}])
def test_lazy_batch_norm_options(kwargs):
    m = nn.LazyBatchNorm1d(**kwargs)
    y = m(ember.randn(4, 3))
    # as in PyTorch: with nothing lazy to materialize, num_features stays 0
    lazy_tensors = kwargs.get("affine", True) or kwargs.get("track_running_stats", True)
    assert y.shape == (4, 3) and type(m) is nn.BatchNorm1d
    assert m.num_features == (3 if lazy_tensors else 0)
    keys = {"weight", "bias"} if kwargs.get("affine", True) else set()
    if kwargs.get("track_running_stats", True):
        keys |= {"running_mean", "running_var", "num_batches_tracked"}
    assert set(m.state_dict()) == keys
    if torch is not None:
        t = torch.nn.LazyBatchNorm1d(**kwargs)
        t(torch.randn(4, 3))
        assert set(t.state_dict()) == keys and repr(m) == repr(t).replace("torch", "ember")


def test_a_users_lazy_module_with_its_own_initialize_parameters():
    class LazyScale(LazyModuleMixin, nn.Module):  # the PyTorch recipe
        def __init__(self):
            super().__init__()
            self.scale = nn.UninitializedParameter()

        def initialize_parameters(self, input):
            if self.has_uninitialized_params():
                with ember.no_grad():
                    self.scale.materialize((input.shape[-1],))
                    self.scale.fill_(2.0)

        def forward(self, x):
            return x * self.scale

    m = LazyScale()
    assert m(ember.ones(2, 3)).tolist() == [[2.0] * 3] * 2 and m.scale.shape == (3,)
    assert type(m) is LazyScale and len(m._forward_pre_hooks) == 0

    class NotLazyEnough(LazyModuleMixin, nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(NotImplementedError, match="initialize_parameters"):
        NotLazyEnough()(ember.ones(1))
