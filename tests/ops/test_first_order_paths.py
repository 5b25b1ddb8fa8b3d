"""The array-form first-order backwards agree with the tensor formulas they shortcut.

Some hot ops compute their first-order gradient on arrays (NumPy blocks or numba kernels,
ops/_kernels.py and ops/_native_*.py) and keep a differentiable tensor formula for
``create_graph=True``.  Each case below takes the same gradient both ways, with the numba
kernels on and off, at a size that reaches the kernels, and requires them to agree.
"""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native

ROWS, COLS = 96, 128  # 12,288 elements: above the kernels' minimum size

CASES = {
    "relu": lambda x: F.relu(x),
    "tanh": lambda x: x.tanh(),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "softmax": lambda x: F.softmax(x, dim=-1),
    "softmax_dim0": lambda x: F.softmax(x, dim=0),
    "log_softmax": lambda x: F.log_softmax(x, dim=-1),
    "layer_norm": lambda x: F.layer_norm(x, (COLS,), _param(x, 1), _param(x, 2)),
    "batch_norm": lambda x: F.batch_norm(x, None, None, _param(x, 3), _param(x, 4),
                                         training=True),
    "cross_entropy": lambda x: F.cross_entropy(x, _targets(), reduction="none"),
    "cross_entropy_smoothing": lambda x: F.cross_entropy(x, _targets(), label_smoothing=0.1),
    "nll_loss": lambda x: F.nll_loss(x, _targets(), reduction="sum"),
}


def _param(x, seed):
    """A weight for the last dimension of `x`, in its dtype."""
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.standard_normal(x.shape[-1]), dtype=x.dtype)


def _targets():
    return ember.tensor(np.random.default_rng(5).integers(0, COLS, ROWS))


def _gradient(fn, x0, weights, create_graph):
    x = x0.detach().requires_grad_()
    y = fn(x)
    (g,) = ember.autograd.grad(y, x, weights if y.dim() else None, create_graph=create_graph)
    return g.detach().numpy()


@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_array_and_tensor_backwards_agree(name, dtype, numba_on):
    rng = np.random.default_rng(0)
    x0 = ember.tensor(rng.standard_normal((ROWS, COLS)) * 2, dtype=getattr(ember, dtype))
    fn = CASES[name]
    probe = fn(x0)
    weights = ember.tensor(rng.standard_normal(tuple(probe.shape)), dtype=probe.dtype)
    with native.use_numba(numba_on):
        fast = _gradient(fn, x0, weights, create_graph=False)  # the array form
        formula = _gradient(fn, x0, weights, create_graph=True)  # the tensor form
    tol = 2e-5 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(fast, formula, rtol=tol, atol=tol)


def test_dropout_paths_agree_for_the_same_mask():
    x0 = ember.randn(ROWS, COLS, dtype=ember.float64)
    grads = []
    for create_graph in (False, True):
        ember.manual_seed(3)
        x = x0.detach().requires_grad_()
        y = F.dropout(x, p=0.3, training=True)
        (g,) = ember.autograd.grad(y.sum(), x, create_graph=create_graph)
        grads.append(g.detach().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert set(np.unique(grads[0])) <= {0.0, 1 / 0.7}
