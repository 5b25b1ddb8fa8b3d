"""A lone image's Winograd convolution on two threads (ops/_native_winograd_lone.py):
against float64 im2col, with the worker awake or asleep, non-finite values, and where
it does not run."""

import numpy as np
import pytest

from ember.ops import _native as native
from ember.ops import _native_direct_conv as direct
from ember.ops import _native_winograd as winograd
from ember.ops import _parallel
from ember.ops.conv_arrays import Geometry, conv_array

from .test_winograd import assert_like_im2col

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.fixture(autouse=True)
def _blocked_kernels_off(no_blocked_conv):
    """These tests are of the paths that ops/_native_blocked_conv.py's kernels take over
    where they run (tests/ops/test_blocked_conv.py has theirs)."""


@pytest.fixture
def lone(monkeypatch, on_two_threads):
    """The path taken from 8 channels and 4 tiles (so that small shapes reach it), the
    direct kernels off; returns a list that records each lone call's outcome (True: it
    ran on the two threads)."""
    from ember.ops import _native_winograd_lone as module

    monkeypatch.setattr(direct, "ENABLED", False)
    monkeypatch.setattr(winograd, "ENABLED", True)   # (whatever EMBER_NO_WINOGRAD says)
    for name in ("MIN_CHANNELS", "MIN_CHANNELS_SMALL_OUTPUT"):
        monkeypatch.setattr(winograd, name, 8)
    monkeypatch.setattr(winograd, "MIN_CHANNEL_PRODUCT", 64)
    monkeypatch.setattr(winograd, "MIN_TILES", 4)
    calls = []
    real = module.conv_forward
    monkeypatch.setattr(module, "conv_forward", lambda *args: _record(calls, real, args))
    return calls


def _record(calls, real, args):
    result = real(*args)
    calls.append(result is not None)
    return result


def _case(seed, c, o, h, w):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    k = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    return x, k, rng.standard_normal(o).astype(np.float32)


def _exact(x, k, geo, b):
    return conv_array(x.astype(np.float64), k.astype(np.float64), geo,
                      None if b is None else b.astype(np.float64))


# (C, O, H, W, padding): MNIST's conv2, an odd count of tile rows (7 -> 3 + 4), two
# rows, a bias-free layer, an output cut off at the tiles' edge
@pytest.mark.parametrize("c, o, h, w, pad, bias", [
    (32, 64, 26, 26, 0, True), (8, 16, 26, 13, 1, True), (16, 8, 10, 9, 0, False),
    (9, 17, 7, 30, 1, True),
])
def test_matches_float64_on_two_threads(c, o, h, w, pad, bias, lone):
    x, k, b = _case(c + h, c, o, h, w)
    b = b if bias else None
    geo = Geometry((h, w), (1, 1), (pad, pad), (pad, pad), (1, 1), 1)
    got = conv_array(x, k, geo, b)
    assert lone == [True]
    exact = _exact(x, k, geo, b)
    assert got.dtype == np.float32 and got.shape == exact.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


def test_geometries_in_turn_keep_their_own_scratch(lone):
    """Geometries alternated, each call on fresh inputs: every result is its own
    convolution (a plan's scratch arrays reused, the call's arrays filled in anew); one
    differs from another only in its padding below and to the right."""
    padded = Geometry((12, 12), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    cases = [(_case(s, 8, 16, 12, 12), padded) for s in (1, 2)] + [
        (_case(3, 8, 24, 10, 17), Geometry((10, 17), (1, 1), (0, 0), (0, 0), (1, 1), 1)),
        (_case(4, 8, 16, 12, 12), padded._replace(hi=(0, 0)))]
    for (x, k, b), geo in cases + cases:
        got = conv_array(x, k, geo, b)
        exact = _exact(x, k, geo, b)
        assert got.shape == exact.shape
        np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())
    assert lone == [True] * 8


def test_a_sleeping_worker_is_woken(lone, workers_asleep):
    x, k, b = _case(5, 8, 16, 16, 16)
    geo = Geometry((16, 16), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    worker = workers_asleep()
    assert worker._sleeping
    got = conv_array(x, k, geo, b)
    assert lone == [True]
    exact = _exact(x, k, geo, b)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad, band", [(np.inf, 2), (np.nan, 9), (-np.inf, 13)])
def test_non_finite_inputs_land_where_im2col_puts_them(bad, band, lone):
    """A non-finite input in either thread's bands: the convolution is computed again
    by im2col."""
    x, k, b = _case(6, 8, 16, 16, 16)
    x[0, 3, band, 5] = bad
    assert_like_im2col(x, k, Geometry((16, 16), (1, 1), (0, 0), (0, 0), (1, 1), 1), b)
    assert lone == [True]


def test_one_thread_or_several_images_take_the_bands_path(lone, monkeypatch):
    x, k, b = _case(7, 8, 16, 12, 12)
    geo = Geometry((12, 12), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    with monkeypatch.context() as one:
        one.setattr(_parallel, "threads", lambda: 1)
        alone = conv_array(x, k, geo, b)
    pair = conv_array(np.concatenate([x, x]), k, geo, b)
    assert lone == []
    exact = _exact(x, k, geo, b)[0]
    for got in (alone[0], pair[0], pair[1]):
        np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


def test_scratch_kept_within_its_budget(lone, monkeypatch):
    """Plans are kept while their scratch fits the budget together; a plan larger than
    the budget is used once and dropped, with the same results."""
    from ember.ops import _native_winograd_lone as module

    monkeypatch.setattr(module, "_plans", {})
    small, large = _case(8, 8, 16, 12, 12), _case(9, 16, 32, 20, 20)
    geo_small = Geometry((12, 12), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    geo_large = Geometry((20, 20), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    conv_array(*small[:2], geo_small, small[2])
    (kept,) = module._plans.values()
    monkeypatch.setattr(module, "_KEPT_BYTES", kept.bytes())   # room for that one only
    for (x, k, b), geo in [(large, geo_large), (small, geo_small), (large, geo_large)]:
        got = conv_array(x, k, geo, b)
        exact = _exact(x, k, geo, b)
        np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())
        assert list(module._plans.values()) == [kept]
    assert lone == [True] * 4


def test_a_lone_image_with_many_filters_takes_im2col(lone, monkeypatch):
    """From FILTERS_SPLIT_MIN filters a lone image leaves the Winograd path (its bands
    would run on one thread), where two images stay on it; up to it, the two threads."""
    x, k, b = _case(10, 8, 16, 12, 12)
    geo = Geometry((12, 12), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    monkeypatch.setattr(winograd, "FILTERS_SPLIT_MIN", 8 * 16 - 1)
    assert not winograd.supports(1, np.float32, 8, 16, (3, 3), geo)
    assert winograd.supports(2, np.float32, 8, 16, (3, 3), geo)
    got = conv_array(x, k, geo, b)
    assert lone == []
    exact = _exact(x, k, geo, b)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())
    monkeypatch.setattr(winograd, "FILTERS_SPLIT_MIN", 8 * 16)
    assert winograd.supports(1, np.float32, 8, 16, (3, 3), geo)
    conv_array(x, k, geo, b)
    assert lone == [True]
