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


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacked_product_gradients_agree_and_keep_the_inputs_layout(dtype, on_two_threads):
    # attention's products: q, k, v are transposed views of one projection's output;
    # the array form writes each gradient in the memory order of its input, so that the
    # backward of the transposes and the view adds no copy
    rng = np.random.default_rng(1)
    b, t, h, d = 4, 64, 4, 32    # 16 products of 64x32 @ 32x64: split over the threads
    qkv0 = ember.tensor(rng.standard_normal((b, t, 3 * h * d)), dtype=getattr(ember, dtype))
    weights = ember.tensor(rng.standard_normal((b, t, h * d)), dtype=qkv0.dtype)

    def attention(qkv):
        q, k, v = (part.view(b, t, h, d).transpose(1, 2) for part in qkv.split(h * d, dim=2))
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return (att @ v).transpose(1, 2).reshape(b, t, h * d)

    fast = _gradient(attention, qkv0, weights, create_graph=False)
    formula = _gradient(attention, qkv0, weights, create_graph=True)
    tol = 2e-5 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(fast, formula, rtol=tol, atol=tol)

    q = qkv0.detach().requires_grad_()
    view = q.view(b, t, 3 * h, d).transpose(1, 2)   # (b, 3h, t, d) over (b, t, 3h, d) memory
    other = ember.tensor(rng.standard_normal((b, 3 * h, d, 5)), dtype=q.dtype)
    (grad,) = ember.autograd.grad((view @ other).sum(), view)
    assert grad.transpose(1, 2).is_contiguous()     # laid out like `view`
    expected = np.ones((b, 3 * h, t, 5)) @ np.swapaxes(other.numpy().astype(np.float64), -1, -2)
    np.testing.assert_allclose(grad.numpy(), expected, rtol=tol, atol=tol)


def test_stacked_product_gradient_of_a_column_major_stack():
    # k.transpose(-2, -1) of a transposed view: its gradient's matrices are column-major,
    # computed as the transposed product (BLAS writes row-major blocks)
    rng = np.random.default_rng(2)
    q = ember.tensor(rng.standard_normal((2, 3, 6, 4)), requires_grad=True)
    k = ember.tensor(rng.standard_normal((2, 6, 3, 4)), requires_grad=True)
    kt = k.transpose(1, 2).transpose(-2, -1)        # (2, 3, 4, 6)
    assert ember.autograd.gradcheck(lambda a, c: a @ c.transpose(1, 2).transpose(-2, -1),
                                    (q, k))
    (gq, gk) = ember.autograd.grad((q @ kt * ember.arange(36.).view(6, 6)).sum(), (q, k))
    w = np.arange(36.).reshape(6, 6)
    qa, ka = q.detach().numpy(), np.swapaxes(np.swapaxes(k.detach().numpy(), 1, 2), -2, -1)
    w4 = np.broadcast_to(w, (2, 3, 6, 6))
    np.testing.assert_allclose(gq.numpy(), w4 @ np.swapaxes(ka, -1, -2))
    expected_kt = np.swapaxes(qa, -1, -2) @ w4
    np.testing.assert_allclose(gk.numpy(), np.swapaxes(np.swapaxes(expected_kt, -2, -1), 1, 2))
