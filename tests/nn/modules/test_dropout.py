"""Dropout layers and their functional forms: train/eval, reproducible masks, channel-wise
masks, alpha dropout statistics, in-place use, p validation."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.testing import assert_close


def test_dropout_train_and_eval():
    m = nn.Dropout(0.4)
    x = ember.ones(200, 50)
    y = m(x)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.6) < 0.02
    assert_close(y.numpy()[kept], np.full(kept.sum(), 1 / 0.6, dtype=np.float32))
    m.eval()
    assert m(x) is x
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    assert repr(nn.Dropout2d(0.2, True)) == "Dropout2d(p=0.2, inplace=True)"
    assert repr(nn.AlphaDropout(0.1)) == "AlphaDropout(p=0.1, inplace=False)"
    assert repr(nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"


def test_masks_are_reproducible_with_manual_seed():
    x = ember.ones(10, 10)
    ember.manual_seed(42)
    a = F.dropout(x, 0.5)
    ember.manual_seed(42)
    b = F.dropout(x, 0.5)
    assert ember.equal(a, b)
    assert not ember.equal(a, F.dropout(x, 0.5))


def test_gradient_is_the_mask():
    x = ember.ones(20, 20, requires_grad=True)
    y = F.dropout(x, 0.25)
    y.sum().backward()
    assert_close(x.grad, y.detach())
    assert y.grad_fn.name() == "MulBackward0"


def test_p_validation_and_edges():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                       "got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="but got -0.1"):
        F.dropout(ember.ones(3), -0.1)
    with pytest.raises(ValueError, match="but got 2"):
        F.alpha_dropout(ember.ones(3), 2)
    assert_close(F.dropout(ember.ones(3, 4), 1.0), np.zeros((3, 4), dtype=np.float32))
    assert_close(F.dropout(ember.ones(3, 4), 0.0), np.ones((3, 4), dtype=np.float32))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                       "output type Long"):
        F.dropout(ember.tensor([1, 2]), 0.5)


def test_inplace_dropout():
    base = ember.ones(10, 10, requires_grad=True)
    x = base * 1.0
    y = nn.Dropout(0.5, inplace=True)(x)
    assert y is x
    y.sum().backward()
    assert_close(base.grad, y.detach())


@pytest.mark.parametrize("fn,shape,mask_shape", [
    (F.dropout1d, (4, 6, 5), (4, 6, 1)),
    (F.dropout1d, (6, 5), (6, 1)),
    (F.dropout2d, (4, 6, 3, 3), (4, 6, 1, 1)),
    (F.dropout2d, (6, 3, 3), (6, 3, 1)),  # 3-D: read as (N, C, L), with a warning
    (F.dropout3d, (2, 6, 2, 2, 2), (2, 6, 1, 1, 1)),
    (F.dropout3d, (6, 2, 2, 2), (6, 1, 1, 1)),
])
def test_channel_dropout_drops_whole_channels(fn, shape, mask_shape):
    x = ember.ones(*shape)
    if fn is F.dropout2d and len(shape) == 3:
        with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
            y = fn(x, 0.5)
    else:
        y = fn(x, 0.5)
    data = y.numpy()
    reduce_axes = tuple(i for i, s in enumerate(mask_shape) if s == 1)
    assert (data.min(axis=reduce_axes) == data.max(axis=reduce_axes)).all()


def test_channel_dropout_errors_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                       "4D input"):
        F.dropout1d(ember.ones(2, 3, 4, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(ember.ones(4, 5))
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(ember.ones(4, 5, 3))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(ember.ones(3), 0.5, True)
    assert nn.Dropout2d()(ember.ones(2, 3, 2, 2)).shape == (2, 3, 2, 2)


def test_alpha_dropout_keeps_mean_and_variance():
    ember.manual_seed(0)
    x = ember.randn(400, 250)
    y = F.alpha_dropout(x, 0.3, training=True)
    assert abs(y.mean().item()) < 0.02 and abs(y.std().item() - 1) < 0.02
    assert F.alpha_dropout(x, 0.3) is x  # training defaults to False
    m = nn.AlphaDropout(0.3)
    assert not ember.equal(m(x), x)
    m.eval()
    assert m(x) is x
    f = nn.FeatureAlphaDropout(0.5)(ember.randn(4, 6, 3))
    data = f.numpy()
    dropped = np.isclose(data, data[..., :1]).all(axis=2)
    assert dropped.any()


def test_top_level_forms():
    x = ember.ones(4, 5)
    ember.manual_seed(1)
    a = ember.dropout(x, 0.5, True)
    ember.manual_seed(1)
    assert ember.equal(a, F.dropout(x, 0.5))
    assert ember.dropout(x, 0.5, False) is x
    assert ember.feature_dropout(ember.ones(2, 3, 4), 0.5, True).shape == (2, 3, 4)
    assert ember.alpha_dropout(x, 0.5, False) is x
    assert ember.feature_alpha_dropout(ember.ones(2, 3), 0.5, False).shape == (2, 3)
    y = x.clone()
    ember.dropout_(y, 0.5, True)
    assert set(np.unique(y.numpy())) <= {0.0, 2.0}


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9])
def test_mask_frequency_and_scale(p):
    x = ember.ones(400, 250)
    y = F.dropout(x, p).numpy()
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_array_equal(y[kept], np.float32(1) / np.float32(1 - p))
    y64 = F.dropout(x.double(), p).numpy()
    assert y64.dtype == np.float64 and abs((y64 != 0).mean() - (1 - p)) < 0.01
