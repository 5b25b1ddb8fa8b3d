"""The erf and erfc kernels (ops/_native_erf.py: the C library's functions in float64 on
ember's threads) against SciPy in float64, special values, and the NumPy path."""

import numpy as np
import pytest

import ember
from ember.ops import _native as native
from ember.ops import _native_activation as nact
from ember.ops import _native_erf

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")
special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_against_scipy_and_the_numpy_path(name, dtype):
    x0 = np.concatenate([np.linspace(-6, 27, 20001), np.geomspace(1e-30, 1, 300),
                         -np.geomspace(1e-30, 1, 300)]).astype(dtype)
    assert _native_erf.takes(x0)
    got = getattr(ember, name)(ember.tensor(x0)).numpy()
    want = getattr(special, name)(x0.astype(np.float64))
    assert got.dtype == dtype
    # float32: the float64 result rounded once.  float64: SciPy's own erfc is off by up to
    # 5.7e-14 of mpmath's where the C library's is within an ulp (erfc(0.86235):
    # 0.22263662360424652 here and in mpmath, ...674 in SciPy; erfc(11.3283): 9.170818938
    # 303242e-58 here, 9.170818938303241e-58 in mpmath, ...357e-58 in SciPy)
    rtol = np.finfo(np.float32).eps if dtype == np.float32 else 1e-13
    tiny = np.finfo(dtype).tiny
    np.testing.assert_allclose(got, want, rtol=rtol, atol=tiny)
    with native.use_numba(False):
        numpy_path = getattr(ember, name)(ember.tensor(x0)).numpy()
    # (the NumPy path's float64 formulas are the less exact: erfc within 6e-14 here)
    np.testing.assert_allclose(got, numpy_path, rtol=1e-13 if dtype == np.float64 else
                               8 * np.finfo(dtype).eps, atol=tiny)


def test_special_values_and_the_gradient():
    x0 = np.zeros(nact.MIN_SIZE, np.float32)
    x0[:5] = [np.nan, np.inf, -np.inf, -0.0, 1e-40]
    y = ember.erf(ember.tensor(x0)).numpy()[:5]
    assert np.isnan(y[0]) and y[1] == 1 and y[2] == -1
    assert y[3] == 0 and np.signbit(y[3]) and y[4] > 0
    c = ember.erfc(ember.tensor(x0)).numpy()[:3]
    assert np.isnan(c[0]) and c[1] == 0 and c[2] == 2
    x = ember.tensor(np.linspace(-3, 3, nact.MIN_SIZE), requires_grad=True)
    ember.erf(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 / np.sqrt(np.pi) * np.exp(-x.detach().numpy()
                                                                              ** 2), rtol=1e-6)
