"""Average pooling's gradient: where the windows tile the input (stride = kernel, no
padding), each input element's share is written straight into place; it equals the
general path's (a zeroed buffer and an add a window tap) bit for bit, in 1, 2 and 3
dims, and a float64 loop written here."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import pooling


def _grad(fn, x0, g0, tiled: bool, monkeypatch):
    monkeypatch.setattr(pooling, "_tiles", lambda geo, real=pooling._tiles: tiled and real(geo))
    x = ember.tensor(x0, requires_grad=True)
    fn(x).backward(ember.tensor(g0))
    return x.grad.numpy()


@pytest.mark.parametrize("nd, shape, kernel", [(1, (2, 3, 8), 2), (2, (2, 3, 6, 4), 2),
                                               (2, (1, 2, 9, 6), (3, 2)),
                                               (3, (1, 2, 4, 6, 2), 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_windows_give_the_general_paths_gradient(nd, shape, kernel, dtype, monkeypatch):
    rng = np.random.default_rng(nd)
    x0 = rng.standard_normal(shape).astype(dtype)
    fn = lambda t: getattr(F, f"avg_pool{nd}d")(t, kernel)  # noqa: E731
    out_shape = tuple(fn(ember.tensor(x0)).shape)
    g0 = rng.standard_normal(out_shape).astype(dtype)
    fast = _grad(fn, x0, g0, True, monkeypatch)
    general = _grad(fn, x0, g0, False, monkeypatch)
    np.testing.assert_array_equal(fast, general)
    # by hand: each element gets its window's gradient over the window's size
    k = (kernel,) * nd if isinstance(kernel, int) else kernel
    want = np.zeros(shape)
    for lead in itertools.product(*(range(n) for n in shape[:2])):
        for pos in itertools.product(*(range(n) for n in shape[2:])):
            window = tuple(p // kk for p, kk in zip(pos, k))
            want[lead + pos] = g0[lead + window] / np.prod(k)
    np.testing.assert_allclose(fast, want, rtol=1e-6)


def test_only_tiling_windows_take_the_fast_path():
    x = ember.randn(1, 2, 6, 6, dtype=ember.float64, requires_grad=True)
    cases = [((2, None, 0, False), True), ((3, 1, 0, False), False), ((2, 2, 1, False), False),
             ((4, 4, 0, True), False), ((3, 3, 0, False), True)]
    for (kernel, stride, padding, ceil), tiles in cases:
        geo = pooling._geometry("avg_pool2d", 2, x, kernel, stride, padding, 1, ceil)
        assert pooling._tiles(geo) == tiles, (kernel, stride, padding, ceil)
        assert ember.autograd.gradcheck(
            lambda t, a=(kernel, stride, padding, ceil): F.avg_pool2d(t, *a), (x,))
