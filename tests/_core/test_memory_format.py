"""Memory formats: channels-last layouts through contiguous, clone, to, the *_like
factories, Module.to and is_contiguous (ember/_core/memory_format.py)."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def _nchw():
    return ember.arange(24.0).reshape(1, 2, 3, 4)


def test_constants():
    assert repr(ember.channels_last) == "ember.channels_last"
    assert isinstance(ember.contiguous_format, ember.memory_format)
    assert len({ember.contiguous_format, ember.channels_last, ember.channels_last_3d,
                ember.preserve_format}) == 4


def test_contiguous_in_channels_last_keeps_values_and_puts_channels_last_in_memory():
    x = _nchw()
    cl = x.contiguous(memory_format=ember.channels_last)
    assert cl.stride() == (24, 1, 8, 2)
    assert cl.is_contiguous(memory_format=ember.channels_last) and not cl.is_contiguous()
    assert bool((cl == x).all())
    assert cl.contiguous(memory_format=ember.channels_last) is cl
    assert cl.contiguous().stride() == (24, 12, 4, 1)
    assert x.contiguous() is x
    x5 = ember.zeros(1, 2, 3, 4, 5).contiguous(memory_format=ember.channels_last_3d)
    assert x5.stride() == (120, 1, 40, 10, 2)


def test_format_errors():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        ember.ones(2, 3).contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        _nchw().contiguous(memory_format=ember.preserve_format)
    with pytest.raises(TypeError, match="memory_format must be"):
        _nchw().contiguous(memory_format="channels_last")
    assert not ember.ones(2, 3).is_contiguous(memory_format=ember.channels_last)


def test_clone_and_like_factories_preserve_the_layout_by_default():
    cl = _nchw().contiguous(memory_format=ember.channels_last)
    assert cl.clone().stride() == (24, 1, 8, 2)
    assert cl.clone(memory_format=ember.contiguous_format).stride() == (24, 12, 4, 1)
    assert ember.ones(2, 3).t().clone().stride() == (1, 3)  # a dense layout is kept
    for like in (ember.empty_like, ember.zeros_like, ember.ones_like, ember.rand_like,
                 ember.randn_like):
        assert like(cl).stride() == (24, 1, 8, 2)
        assert like(cl, memory_format=ember.contiguous_format).stride() == (24, 12, 4, 1)
    assert ember.full_like(cl, 2.0).stride() == (24, 1, 8, 2)
    assert ember.zeros_like(_nchw(), memory_format=ember.channels_last).stride() == (24, 1, 8, 2)


def test_to_and_module_to():
    x = _nchw()
    assert x.to(memory_format=ember.channels_last).stride() == (24, 1, 8, 2)
    assert x.to(ember.float64, memory_format=ember.channels_last).stride() == (24, 1, 8, 2)
    assert x.to(memory_format=ember.preserve_format) is x
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten(), nn.Linear(6, 2))
    expected = model(x)
    model.to(memory_format=ember.channels_last)
    assert model[0].weight.stride() == (18, 1, 6, 2)
    assert model[2].weight.stride() == (6, 1)  # 2-D tensors keep their layout
    assert isinstance(model[0].weight, nn.Parameter)
    out = model(x.to(memory_format=ember.channels_last))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6)


def test_gradients_flow_through_a_change_of_layout():
    x = ember.tensor(np.random.default_rng(0).standard_normal((2, 3, 2, 2)), requires_grad=True)
    assert gradcheck(lambda t: t.contiguous(memory_format=ember.channels_last).sin(), (x,))
    assert gradcheck(lambda t: t.clone(memory_format=ember.channels_last) * 2, (x,))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_strides_match_pytorch():
    for lib in (ember, torch):
        x = lib.arange(24.0).reshape(1, 2, 3, 4)
        cl = x.contiguous(memory_format=lib.channels_last)
        strides = [cl.stride(), cl.clone().stride(), lib.empty_like(cl).stride(), (cl + 1).stride(),
                   x.to(memory_format=lib.channels_last).stride(),
                   cl.is_contiguous(memory_format=lib.channels_last), cl.is_contiguous()]
        if lib is ember:
            ours = strides
    assert ours == strides
