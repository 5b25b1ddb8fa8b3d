"""MKL's sequential products on ember's threads (ops/_mkl.py, the ``ember[mkl]`` extra):
which BLAS is chosen, and products through MKL equal float64 NumPy on every path (the
caller's share, the workers', stacks, single rows, the LSTM's threaded loop)."""

import ctypes
import functools
import os

import numpy as np
import pytest

from ember.ops import _mkl, _native
from tests.processes import run_together

needs_mkl = pytest.mark.skipif(_mkl.library_path() is None,
                               reason="MKL is not installed (pip install 'ember[mkl]')")


def test_which_blas_ember_threads_run():
    wanted = _mkl.wanted
    assert wanted(None, "GenuineIntel", True) is True        # automatic: Intel, installed
    assert wanted("", "AuthenticAMD", True) is False         # not measured on AMD
    assert wanted(None, "GenuineIntel", False) is False      # not installed
    assert wanted(" OpenBLAS ", "GenuineIntel", True) is False
    assert wanted("mkl", "AuthenticAMD", True) is True
    with pytest.raises(ImportError, match=r"ember\[mkl\]"):
        wanted("mkl", "GenuineIntel", False)
    with pytest.raises(ValueError, match="EMBER_BLAS"):
        wanted("blis", "GenuineIntel", True)


@needs_mkl
def test_mkl_runs_sequential_products_equal_to_float64():
    products = _mkl.load()
    assert products is not None and products.library == "mkl"
    lib = ctypes.CDLL(_mkl.library_path())
    assert lib.MKL_Get_Max_Threads() == 1            # the sequential layer: no pool of its own
    rng = np.random.default_rng(1)
    for dtype, gemm, gemv in ((np.float32, products.sgemm, products.sgemv),
                              (np.float64, products.dgemm, products.dgemv)):
        a = rng.standard_normal((37, 21)).astype(dtype)
        b = rng.standard_normal((53, 21)).astype(dtype)      # used transposed
        out = np.zeros((37, 53), dtype)
        # row-major, B transposed: out = a @ b.T
        gemm(101, 111, 112, 37, 53, 21, 1.0, a.ctypes.data, 21, b.ctypes.data, 21, 0.0,
             out.ctypes.data, 53)
        exact = a.astype(np.float64) @ b.astype(np.float64).T
        tol = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(out, exact, rtol=tol, atol=tol * np.abs(exact).max())
        x, y = a[0].copy(), np.zeros(53, dtype)
        gemv(101, 111, 53, 21, 1.0, b.ctypes.data, 21, x.ctypes.data, 1, 0.0, y.ctypes.data, 1)
        np.testing.assert_allclose(y, exact[0], rtol=tol, atol=tol * np.abs(exact).max())


# Every path of a split product, in a fresh process with the BLAS chosen by EMBER_BLAS;
# prints the library ember's threads call, then one maximum relative error per case.
_SPLIT_PATHS = """
import numpy as np, ember
from ember.ops import _blas, _parallel, _workers
ember.set_num_threads(2)
_parallel.SPLIT_MIN = _parallel.BATCH_ITEM_MIN = 1
rng = np.random.default_rng(0)
print(_blas.products().library)
def err(got, a, b):
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return float(np.abs(got - exact).max() / np.abs(exact).max())
for dtype in (np.float32, np.float64):
    for m, k, n in ((300, 17, 9), (5, 40, 301), (260, 8, 300), (1, 300, 40)):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        print(err(_parallel.matmul(a, b), a, b))
        at, bt = np.asfortranarray(a), np.asfortranarray(b)
        print(err(_parallel.matmul(at, bt), a, b))
    a = rng.standard_normal((6, 30, 20)).astype(dtype)
    b = rng.standard_normal((6, 20, 40)).astype(dtype)
    print(err(_parallel.matmul(a, b), a, b))
    g = rng.standard_normal((64, 48)).astype(dtype)
    w = rng.standard_normal((48, 32)).astype(dtype)
    x = rng.standard_normal((64, 32)).astype(dtype)
    first, second = _parallel.matmul_pair(g, w, g.T, x)
    print(err(first, g, w)); print(err(second, g.T, x))
lstm = ember.nn.LSTM(16, 32, num_layers=2)
inputs = ember.randn(7, 4, 16, requires_grad=True)
out, _ = lstm(inputs)
out.sum().backward()
lstm64 = ember.nn.LSTM(16, 32, num_layers=2).double()
lstm64.load_state_dict({k: v.double() for k, v in lstm.state_dict().items()})
inputs64 = inputs.detach().double().requires_grad_()
out64, _ = lstm64(inputs64)
out64.sum().backward()
print(float((out.double() - out64).abs().max() / out64.abs().max()))
print(float((inputs.grad.double() - inputs64.grad).abs().max() / inputs64.grad.abs().max()))
"""


@functools.cache
def _split_runs() -> dict:
    """`_SPLIT_PATHS` run with EMBER_BLAS=mkl (where MKL is installed) and =openblas, at
    once: by setting, (the library used, the errors printed)."""
    settings = ("mkl", "openblas") if _mkl.library_path() is not None else ("openblas",)
    runs = run_together({s: (_SPLIT_PATHS, dict(os.environ, EMBER_BLAS=s)) for s in settings})
    found = {}
    for setting, run in runs.items():
        lines = run.stdout.split()
        found[setting] = lines[0], [float(x) for x in lines[1:]]
    return found


def _split_paths(setting: str) -> tuple:
    return _split_runs()[setting]


@needs_mkl
@pytest.mark.skipif(not _native.available(), reason="ember's CBLAS calls need numba")
def test_split_products_and_the_lstm_through_mkl_match_float64():
    library, errors = _split_paths("mkl")
    assert library == "mkl"
    float32, float64 = errors[:11], errors[11:22]
    assert max(float32) < 1e-5 and max(float64) < 1e-13
    assert max(errors[22:]) < 1e-4          # the float32 LSTM's output and input gradient


@pytest.mark.skipif(not _native.available(), reason="ember's CBLAS calls need numba")
def test_openblas_can_be_asked_for():
    library, errors = _split_paths("openblas")
    assert library == "openblas"
    assert max(errors[:11]) < 1e-5 and max(errors[11:22]) < 1e-13 and max(errors[22:]) < 1e-4
