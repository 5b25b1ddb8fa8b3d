"""Kernels cut over two threads as native parts (ops/_native_cuts.py): each family's
result equals the serial kernel's bit for bit, and the worker's half really ran as a
native part; and the same through the families' entry points on numba's threads
(`run_threaded`), without compiling the kernels' own threaded builds."""

import numpy as np
import pytest

import ember
from ember.ops import _native as native

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.fixture(params=["cut on ember's threads", "shares on numba's threads"])
def cut_or_serial(request, monkeypatch):
    """A function running `compute()` twice: in shares from the smallest size (cut over
    ember's two threads, or one share per numba thread through the entry points;
    asserting that this ran), then on one thread; returns both results."""
    from ember.ops import _native_cuts

    before = ember.get_num_threads()
    ember.set_num_threads(2)
    on_numba = request.param.endswith("numba's threads")
    name = "run_threaded" if on_numba else "run_cut"
    real, taken = getattr(_native_cuts, name), []

    def counted(*args):
        done = real(*args)
        taken.append(done)
        return done

    monkeypatch.setattr(_native_cuts, name, counted)

    def both(compute):
        taken.clear()
        monkeypatch.setattr(native, "SPLIT_MIN", 1 << 40 if on_numba else 1)
        monkeypatch.setattr(native, "PARALLEL_MIN", 1 if on_numba else 1 << 40)
        cut = compute()
        assert taken and all(taken), "no share ran through an entry point"
        monkeypatch.setattr(native, "SPLIT_MIN", 1 << 40)
        monkeypatch.setattr(native, "PARALLEL_MIN", 1 << 40)
        return cut, compute()

    yield both
    ember.set_num_threads(before)


def test_shares_on_numba_threads_compile_no_threaded_build(monkeypatch):
    """A kernel with an entry-point family runs on numba's threads through
    `run_threaded`: its own threaded build stays uncompiled, and a single row (fewer
    items than threads) is one share."""
    from ember.ops import _native_cuts, _native_rows

    kernel = _native_rows._softmax_kernel

    def no_threaded_build(parallel=None):
        assert parallel is False, "the threaded build was asked for"
        return real_compile(parallel)

    real_compile = kernel._compile
    monkeypatch.setattr(kernel, "_compiled", None)   # (as if never built in this process)
    monkeypatch.setattr(kernel, "_compile", no_threaded_build)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        monkeypatch.setattr(native, "SPLIT_MIN", 1 << 40)
        monkeypatch.setattr(native, "PARALLEL_MIN", 1)
        for rows in (1, 2, 7):
            x = np.random.default_rng(rows).standard_normal((rows, 33)).astype(np.float32)
            out = _native_rows.softmax(x, log=True)
            expected = x - x.max(1, keepdims=True)
            expected -= np.log(np.exp(expected).sum(1, keepdims=True))
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    finally:
        ember.set_num_threads(before)
    assert _native_cuts._run_blocks.has_run()
    assert kernel._compiled is None


def _assert_same(a, b):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "relu"])
def test_activations(cut_or_serial, name, dtype):
    from ember.ops import _native_activation as act

    rng = np.random.default_rng(0)
    x = rng.standard_normal(1001).astype(dtype)
    g = rng.standard_normal(1001).astype(dtype)
    _assert_same(*cut_or_serial(lambda: act.forward(name, x)))
    _assert_same(*cut_or_serial(lambda: act.backward(name, g, x)))
    _assert_same(*cut_or_serial(lambda: act.backward(name, g.copy(), x, overwrite=True)))


def _flat_kernels_with_numbers(x, g):
    """name -> a call of each kernel cut with the ``flat*_N`` families (arrays, then N
    numbers): the elementwise activations' and pointwise losses' forwards and gradients."""
    from ember.ops import _native_activation as act
    from ember.ops import _native_pointwise_loss as loss
    from ember.ops import _native_smooth as smooth

    t = x[::-1].copy()
    return {
        "hardtanh": lambda: act.hardtanh(x, -1.5, 2.0),
        "hardtanh_backward": lambda: act.hardtanh_backward(g, act.hardtanh(x, -1.5, 2.0),
                                                           -1.5, 2.0),
        "leaky_relu": lambda: act.leaky_relu(x, 0.1),
        "leaky_relu_backward": lambda: act.leaky_relu_backward(g, x, 0.1),
        "softplus": lambda: smooth.softplus(x, 2.0, 3.0),
        "softplus_backward": lambda: smooth.softplus_backward(g, x, 2.0, 3.0),
        "elu": lambda: smooth.elu(x, 1.3, 1.05, 0.7),
        "elu_backward": lambda: smooth.elu_backward(g, x, 1.3, 1.05, 0.7),
        "mse_gradient": lambda: loss.scaled_difference(x, t, x.dtype.type(0.25)),
        "huber_slope": lambda: loss.huber_slope(x, t, "huber", 0.8, x.dtype.type(0.5)),
        "smooth_l1_slope": lambda: loss.huber_slope(x, t, "smooth_l1", 0.8,
                                                    x.dtype.type(0.5)),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(_flat_kernels_with_numbers(np.zeros(1), np.zeros(1))))
def test_flat_kernels_with_numbers(cut_or_serial, name, dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(1001) * 3).astype(dtype)
    g = rng.standard_normal(1001).astype(dtype)
    _assert_same(*cut_or_serial(_flat_kernels_with_numbers(x, g)[name]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_selects(cut_or_serial, dtype):
    from ember.ops import _native_select as select

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 37, 129)).astype(dtype)
    condition = rng.random((37, 129)) < 0.3
    causal = np.broadcast_to(np.tril(np.ones((129, 129), bool))[:37], a.shape)  # (a view)
    for cond in (condition, causal):
        for x, y in ((a, b), (a, dtype(-np.inf)), (dtype(0.5), b)):
            cut, alone = cut_or_serial(lambda c=cond, x=x, y=y: select.where(c, x, y))
            _assert_same(cut, alone)
            np.testing.assert_array_equal(cut, np.where(cond, x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_norm(cut_or_serial, dtype):
    from ember.ops import _native_group_norm as norm

    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 12, 9, 7)) * 2 + 1).astype(dtype)
    g = rng.standard_normal((6, 12, 9, 7)).astype(dtype)
    w, b = rng.standard_normal((2, 12)).astype(dtype)
    _assert_same(*cut_or_serial(lambda: norm.forward(x, w, b, 4, 1e-5)))
    out, mean, rstd = norm.forward(x, w, b, 4, 1e-5)
    for need_x in (True, False):
        _assert_same(*cut_or_serial(
            lambda need=need_x: norm.backward(g, x, w, mean, rstd, 4, need)))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows(cut_or_serial, dtype, log):
    from ember.ops import _native_rows as rows

    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 19)).astype(dtype)
    g = rng.standard_normal((37, 19)).astype(dtype)
    _assert_same(*cut_or_serial(lambda: rows.softmax(x, log)))
    y = rows.softmax(x, log)
    _assert_same(*cut_or_serial(lambda: rows.softmax_backward(g, y, log)))


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm(cut_or_serial, dtype, affine):
    from ember.ops import _native_rows as rows

    rng = np.random.default_rng(2)
    x = rng.standard_normal((33, 24)).astype(dtype)
    weight = rng.standard_normal(24).astype(dtype) if affine else None
    bias = rng.standard_normal(24).astype(dtype) if affine else None
    cut, serial = cut_or_serial(lambda: rows.layer_norm(x, 1e-5, weight, bias))
    for a, b in zip(cut, serial):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
    # the gradient, cut by blocks of rows (33 rows: blocks of 2, the last of 1)
    g = rng.standard_normal((33, 24)).astype(dtype)
    y, rstd = serial[0], serial[3]
    for need_x in (True, False):
        cut, serial_grads = cut_or_serial(
            lambda nx=need_x: rows.layer_norm_backward(g, y, rstd, weight, nx, True, True))
        for a, b in zip(cut, serial_grads):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy(cut_or_serial, dtype, smoothing):
    from ember.ops import _native_rows as rows

    rng = np.random.default_rng(4)
    x = rng.standard_normal((29, 13)).astype(dtype)
    target = rng.integers(0, 13, 29)
    weight = rng.uniform(0.5, 2, 13).astype(dtype)
    coef_t = ((1 - smoothing) * weight[target]).astype(dtype)
    coef_u = np.full(29, smoothing / 13, dtype)
    (loss, norm), (loss1, norm1) = cut_or_serial(
        lambda: rows.cross_entropy(x, target, coef_t, coef_u, weight))
    _assert_same(loss, loss1)
    _assert_same(norm, norm1)
    logp = x.astype(np.float64) - np.log(np.exp(x.astype(np.float64)).sum(1, keepdims=True))
    exact = -coef_t * logp[np.arange(29), target] - coef_u * (logp * weight).sum(1)
    np.testing.assert_allclose(loss, exact, rtol=1e-5 if dtype == np.float32 else 1e-12)
    g = rng.standard_normal(29).astype(dtype)
    _assert_same(*cut_or_serial(
        lambda: rows.cross_entropy_backward(g, x, norm, target, coef_t, coef_u, weight)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_softmax(cut_or_serial, dtype):
    from ember.ops import _native_rows as rows

    rng = np.random.default_rng(5)
    x = rng.standard_normal((31, 12)).astype(dtype)
    g = rng.standard_normal((31, 12)).astype(dtype)
    mask = rng.random((31, 12)) < 0.25
    y, y1 = cut_or_serial(lambda: rows.masked_softmax(x, mask, 0.3, float("-inf")))
    _assert_same(y, y1)
    _assert_same(*cut_or_serial(lambda: rows.masked_softmax_backward(g, y, mask, 0.3)))


def test_a_cut_entry_point_is_named_after_its_kernels_code():
    # numba checks a cached C entry point against the file of its template only: the name
    # carries a digest of the bound kernel, so an edited kernel is compiled afresh
    def first(x):
        x[0] = 1.0

    def second(x):
        x[0] = 2.0

    a, b = native.Kernel(first, parallel=False, fastmath=False), \
        native.Kernel(second, parallel=False, fastmath=False)
    b.__name__ = a.__name__
    assert native.kernel_digest(a) != native.kernel_digest(b)
    assert native.kernel_digest(a) == native.kernel_digest(
        native.Kernel(first, parallel=False, fastmath=False))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout(cut_or_serial, dtype):
    from ember.ops import _native_dropout as drop

    rng = np.random.default_rng(3)
    x = rng.standard_normal((41, 25)).astype(dtype)
    g = rng.standard_normal((41, 25)).astype(dtype)
    out, keep = cut_or_serial(lambda: drop.dropout(x, np.uint64(12345), 0.7))
    _assert_same(out, keep)
    assert 0.5 < out[1].mean() < 0.9      # (the mask: about 70% kept)
    _assert_same(*cut_or_serial(lambda: drop.dropout_backward(g, out[1], 1 / 0.7)))
    _assert_same(*cut_or_serial(
        lambda: drop.dropout_backward(g.copy(), out[1], 1 / 0.7, overwrite=True)))


def test_a_busy_worker_leaves_the_cut_to_python_parts(monkeypatch):
    from ember.ops import _native_activation as act
    from ember.ops import _native_cuts, _parallel

    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(native, "SPLIT_MIN", 1)
    claim, calls = _parallel._claim, []

    def first_busy():   # the first claim (the native part's) finds the workers busy
        calls.append(1)
        return None if len(calls) == 1 else claim()

    monkeypatch.setattr(_parallel, "_claim", first_busy)
    try:
        x = np.linspace(-3, 3, 999, dtype=np.float32)
        assert not _native_cuts.run_cut(act._FORWARD["relu", 4], "flat2",
                                        (x, np.empty_like(x)), (0, 1))
        calls.clear()
        np.testing.assert_array_equal(act.forward("relu", x), np.maximum(x, 0))
        assert len(calls) == 2   # refused as a native part, then cut as Python parts
    finally:
        ember.set_num_threads(before)


def test_a_cut_for_a_sleeping_worker_is_posted_from_python(monkeypatch, on_two_threads,
                                                           workers_asleep):
    # both shares normally start from one compiled call (_workers.native_halves), which
    # cannot wake a sleeping worker: then the share is posted from Python, which does
    from ember.ops import _native_activation as act
    from ember.ops import _workers

    monkeypatch.setattr(native, "SPLIT_MIN", 1)
    halves, real = [], _workers.native_halves
    monkeypatch.setattr(_workers, "native_halves",
                        lambda *args: halves.append(real(*args)) or halves[-1])
    x = np.linspace(-3, 3, 999, dtype=np.float32)
    np.testing.assert_array_equal(act.forward("relu", x), np.maximum(x, 0))
    worker = workers_asleep()
    np.testing.assert_array_equal(act.forward("gelu", x), _serial_gelu(act, x))
    assert halves[-1] is False and worker.flag[0] == worker.flag[1]
    for _ in range(20):   # awake again: from compiled code (on a busy machine this thread
        # may lose its core for longer than the worker polls: it slept again)
        np.testing.assert_array_equal(act.forward("relu", -x), np.maximum(-x, 0))
        if halves[-1]:
            break
    assert halves[-1] is True


def _serial_gelu(act, x):
    out = np.empty_like(x)
    act._FORWARD["gelu", 4].serial(x, out)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_sums(cut_or_serial, dtype):
    from ember.ops import _native_sums as sums

    x = np.random.default_rng(9).standard_normal((37, 1100)).astype(dtype)   # 2+ chunks
    _assert_same(*cut_or_serial(lambda: sums.trailing_sums(x, (1,), False)))
    _assert_same(*cut_or_serial(lambda: sums.trailing_sums(x, None, True, mean=True)))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_over_a_middle_dim(cut_or_serial, dtype, log):
    from ember.ops import _native_rows as rows

    rng = np.random.default_rng(10)
    x = rng.standard_normal((9, 13, 21)).astype(dtype)
    g = rng.standard_normal((9, 13, 21)).astype(dtype)
    _assert_same(*cut_or_serial(lambda: rows.softmax_inner(x, log)))
    y = rows.softmax_inner(x, log)
    _assert_same(*cut_or_serial(lambda: rows.softmax_inner_backward(g, y, log)))
    e = np.exp(x - x.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(y, np.log(p) if log else p,
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (3, 2, 2, 1), (-1, 2, 1, -2)])
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_plane_maps(cut_or_serial, dtype, mode, pads):
    """Padding's map of planes' last two axes (its interior copied as one run) and its
    transpose, cut or not, equal NumPy's indexing and ``np.add.at`` bit for bit."""
    from ember.ops import _native_axis_map as maps
    from ember.ops.padding import _source_index

    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 5, 9, 8)).astype(dtype)
    cols = _source_index(mode, 8, pads[0], pads[1])
    rows = _source_index(mode, 9, pads[2], pads[3])
    g = rng.standard_normal((3, 5, rows.size, cols.size)).astype(dtype)
    out = cut_or_serial(lambda: maps.gather_planes(x, rows, cols))
    _assert_same(*out)
    np.testing.assert_array_equal(out[0], x[..., rows[:, None], cols[None, :]])
    back = cut_or_serial(lambda: maps.scatter_planes(g, rows, cols, (9, 8)))
    _assert_same(*back)
    want = np.zeros_like(x)
    np.add.at(want, (Ellipsis, rows[:, None], cols[None, :]), g)
    np.testing.assert_array_equal(back[0], want)


def test_a_plane_maps_run_is_its_longest_stretch_of_consecutive_sources():
    from ember.ops._native_axis_map import _geometry

    # reflection by (2, 1) of 5: sources 2 1 0 1 2 3 4 3; the run 0..4 starts at 2
    assert _geometry(np.array([2, 1, 0, 1, 2, 3, 4, 3]), (7, 5)).tolist() == [2, 0, 5, 7, 5]
    # circular by (1, 2) of 4: 3 0 1 2 3 0 1; the first longest run wins
    assert _geometry(np.array([3, 0, 1, 2, 3, 0, 1]), (2, 4)).tolist() == [1, 0, 4, 2, 4]
    assert _geometry(np.array([4]), (1, 5)).tolist() == [0, 4, 1, 1, 5]
