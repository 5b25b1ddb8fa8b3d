"""nn.utils.fuse_conv_bn_eval / fuse_linear_bn_eval: one layer computing bn(layer(x))."""

import numpy as np
import pytest

import ember
from ember import nn

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def _trained_bn(bn, channels):
    ember.manual_seed(3)
    with ember.no_grad():
        bn.running_mean.copy_(ember.randn(channels))
        bn.running_var.copy_(ember.rand(channels) + 0.5)
        if bn.weight is not None:
            bn.weight.copy_(ember.randn(channels))
            bn.bias.copy_(ember.randn(channels))
    return bn.eval()


@pytest.mark.parametrize("conv, bn, transpose", [
    (lambda: nn.Conv2d(3, 4, 3), lambda: nn.BatchNorm2d(4), False),
    (lambda: nn.Conv1d(2, 5, 2, bias=False), lambda: nn.BatchNorm1d(5, affine=False), False),
    (lambda: nn.ConvTranspose2d(3, 4, 2), lambda: nn.BatchNorm2d(4), True),
])
def test_fused_convolution_equals_conv_then_batch_norm(conv, bn, transpose):
    ember.manual_seed(0)
    layer, norm = conv().eval(), bn()
    norm = _trained_bn(norm, norm.num_features)
    x = ember.randn(2, layer.in_channels, *([6] * (layer.weight.dim() - 2)))
    fused = nn.utils.fuse_conv_bn_eval(layer, norm, transpose=transpose)
    assert fused is not layer and isinstance(fused.weight, nn.Parameter)
    np.testing.assert_allclose(fused(x).detach().numpy(), norm(layer(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_fused_linear_and_errors():
    ember.manual_seed(1)
    linear, norm = nn.Linear(4, 3).eval(), _trained_bn(nn.BatchNorm1d(3), 3)
    x = ember.randn(5, 4)
    fused = nn.utils.fuse_linear_bn_eval(linear, norm)
    np.testing.assert_allclose(fused(x).detach().numpy(), norm(linear(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(4, 3), norm)
    with pytest.raises(AssertionError, match="linear.out_features must equal bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(4, 2).eval(), norm)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_fused_weights_match_pytorch():
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal(4)
    rm, rv = rng.standard_normal(4), rng.uniform(0.5, 2, 4)
    bw, bb = rng.standard_normal(4), rng.standard_normal(4)
    ours = nn.utils.fuse_conv_bn_weights(*[ember.tensor(a) for a in (w, b, rm, rv)], 1e-5,
                                         ember.tensor(bw), ember.tensor(bb))
    theirs = torch.nn.utils.fuse_conv_bn_weights(*[torch.tensor(a) for a in (w, b, rm, rv)],
                                                 1e-5, torch.tensor(bw), torch.tensor(bb))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-12)
