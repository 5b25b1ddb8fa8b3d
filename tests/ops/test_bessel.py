"""i0 / special.i1: values (series and asymptotic ranges), gradients, dtypes, PyTorch parity."""

import math

import numpy as np
import pytest

import ember


def _i_series(n, x, terms=80):
    """I_n(x) by its power series in exact-ish Python floats (reference for |x| <= 10)."""
    return sum((x / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n))
               for k in range(terms))


@pytest.mark.parametrize("x", [0.0, 0.5, 1.0, -2.5, 7.0, 10.0])
def test_values_match_the_series(x):
    t = ember.tensor([x], dtype=ember.float64)
    assert ember.i0(t).item() == pytest.approx(_i_series(0, x), rel=1e-14)
    assert ember.special.i1(t).item() == pytest.approx(math.copysign(_i_series(1, abs(x)), x),
                                                       rel=1e-14)


def test_large_arguments_use_the_asymptotic_expansion():
    # scipy.special.i0e/i1e (exponentially scaled) as the reference beyond the series range
    scipy = pytest.importorskip("scipy.special")
    x = np.array([29.0, 30.0, 31.0, 45.0, 100.0, 500.0, -60.0])
    got0 = ember.i0(ember.tensor(x)).numpy()
    got1 = ember.special.i1(ember.tensor(x)).numpy()
    np.testing.assert_allclose(got0 * np.exp(-np.abs(x)), scipy.i0e(x), rtol=1e-13)
    np.testing.assert_allclose(got1 * np.exp(-np.abs(x)), scipy.i1e(x), rtol=1e-13)


def test_special_values_dtypes_and_method():
    x = ember.tensor([math.inf, -math.inf, math.nan, 0.0, 700.0])
    # PyTorch gives NaN at +-inf; finite overflow gives inf
    assert [math.isnan(v) for v in ember.i0(x).tolist()] == [True, True, True, False, False]
    assert ember.i0(x).tolist()[3:] == [1.0, math.inf]
    assert [math.isnan(v) for v in ember.special.i1(x).tolist()[:3]] == [True] * 3
    assert ember.i0(ember.tensor([1, 2])).dtype is ember.float32
    assert ember.i0(ember.tensor([1.0], dtype=ember.float64)).dtype is ember.float64
    y = ember.tensor([1.0, 2.0])
    assert ember.special.i0 is ember.i0
    assert y.i0().tolist() == ember.i0(y).tolist()
    y.i0_()
    assert y.tolist() == pytest.approx([1.2660658777520082, 2.2795853023360673], rel=1e-6)


def test_gradients_are_i1_and_gradcheck():
    x = ember.tensor([-3.0, -0.5, 0.0, 0.7, 2.0, 35.0], dtype=ember.float64, requires_grad=True)
    ember.i0(x).sum().backward()
    assert ember.testing.assert_close(x.grad, ember.special.i1(x.detach())) is None
    small = x.detach()[:5].requires_grad_()
    assert ember.autograd.gradcheck(ember.i0, (small,))
    assert ember.autograd.gradgradcheck(ember.i0, (small,))
    assert ember.autograd.gradcheck(ember.special.i1, (small,))
    assert ember.autograd.gradgradcheck(ember.special.i1, (small,))
    # i1'(0) = 1/2
    (g,) = ember.autograd.grad(ember.special.i1(small).sum(), small)
    assert g[2].item() == 0.5
    assert ember.i0(small).grad_fn.name() == "I0Backward0"
    assert ember.special.i1(small).grad_fn.name() == "SpecialI1Backward0"


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-40, 40, 161), [math.nan, math.inf, -math.inf]])
    for ours, theirs in ((ember.i0, torch.i0), (ember.special.i1, torch.special.i1)):
        for dtype in ("float32", "float64"):
            a = ours(ember.tensor(x, dtype=getattr(ember, dtype))).numpy()
            b = theirs(torch.tensor(x, dtype=getattr(torch, dtype))).numpy()
            np.testing.assert_allclose(a, b, rtol=1e-12 if dtype == "float64" else 2e-6)
    xt = torch.tensor([0.3, -1.7], dtype=torch.float64, requires_grad=True)
    xe = ember.tensor([0.3, -1.7], dtype=ember.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.i0(xt).sum(), xt)
    (ge,) = ember.autograd.grad(ember.i0(xe).sum(), xe)
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-13)
