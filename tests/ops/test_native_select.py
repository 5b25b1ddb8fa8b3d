"""The select kernels behind ``where`` (ember/ops/_native_select.py): the values of
NumPy's ``where`` for the operands they take, and NumPy's own call for the rest."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops import _native as native
from ember.ops import _native_select

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

N = _native_select.MIN_SIZE + 13


def _data(dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N).astype(dtype)
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_select_kernels_give_numpys_values(dtype, monkeypatch):
    a, b = _data(dtype, 1), _data(dtype, 2)
    cond = _data(dtype, 3) > 0
    ran = []
    # (their serial builds, as `native.run` takes for this size: a threaded build costs
    # ~1 s of compiling per kernel and dtype in a cold cache)
    monkeypatch.setattr(native, "run", lambda kernel, *args, cut=(), part=None: (
        ran.append(kernel), kernel.serial(*args[1:]))[1])
    for x, y in ((a, b), (a, 0.5), (-1, b), (a, np.nan), (a, 3)):
        got = _native_select.where(cond, x, y)
        want = np.where(cond, x, y)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got.view(f"i{got.itemsize}"),
                                      want.view(f"i{want.itemsize}"))
    assert len(ran) == 5


@needs_numba
def test_operands_the_kernels_do_not_take_go_to_numpy(monkeypatch):
    monkeypatch.setattr(native, "run", lambda *a, **k: pytest.fail("a kernel ran"))
    a32, a64 = _data(np.float32), _data(np.float64)
    cond = a64 > 0
    cases = [(cond, a32, a64),                       # two dtypes: NumPy promotes
             (cond, a32, np.float64(0.5)),           # a float64 NumPy scalar promotes too
             (cond[::2], a32[::2], a32[::2]),        # strided
             (cond[:100], a32[:100], 0.0),           # small
             (a64 > 0, np.arange(N), 0),             # integers
             (cond, a32, True),                      # a bool operand
             (cond, a32, a32.reshape(1, -1))]        # broadcasting
    for c, x, y in cases:
        np.testing.assert_array_equal(_native_select.where(c, x, y), np.where(c, x, y))


def test_where_and_the_gradients_written_with_it_on_both_paths():
    rng = np.random.default_rng(4)
    x0, y0 = rng.standard_normal((80, 70)), rng.standard_normal((80, 70))
    results = []
    for flag in (True, False):
        with native.use_numba(flag):
            x = ember.tensor(x0.astype(np.float32), requires_grad=True)
            y = ember.tensor(y0.astype(np.float32), requires_grad=True)
            out = ember.where(x > y, x, y) + x.clamp(-0.5, 0.5) + ember.nn.functional.elu(y)
            out.backward(ember.ones(80, 70))
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_select_kernels_cut_over_two_threads_give_numpys_values(dtype, on_two_threads):
    # the arrays cut over ember's threads from SPLIT_MIN elements (a scalar passed whole)
    n = native.SPLIT_MIN + 7
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    cond = rng.standard_normal(n) > 0
    for x, y in ((a, b), (a, 0.5), (-1, b)):
        np.testing.assert_array_equal(_native_select.where(cond, x, y), np.where(cond, x, y))
