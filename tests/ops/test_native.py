"""The numba kernel mechanism (ember/ops/_native.py): compile, switch off, fall back."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ember.ops import _native as native

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@native.kernel
def _square(a):
    return a * a


@native.kernel(parallel=True)
def _sum_of_squares_rows(x, out):
    for i in native.prange(x.shape[0]):
        total = 0.0
        for j in range(x.shape[1]):
            total += _square(x[i, j])
        out[i] = total


def test_parallel_kernel_calling_a_kernel_matches_numpy():
    x = np.random.default_rng(0).standard_normal((37, 11))
    out = np.empty(37)
    _sum_of_squares_rows(x, out)
    np.testing.assert_allclose(out, (x * x).sum(axis=1), rtol=1e-12)


def _both_floats(numba):
    t = numba.types
    return [t.float32(t.Array(t.float32, 1, "A", readonly=True)),
            t.float64(t.Array(t.float64, 1, "A", readonly=True))]


@native.kernel(signatures=_both_floats)
def _first_item(x):
    return x[0]


@native.kernel(signatures=_both_floats)
def _first_item_doubled(x):
    return _first_item(x) * 2


def test_fixed_signatures_are_built_as_the_calls_need_them():
    # a float32 call builds the float32 signature only (a float32 program never pays
    # for the float64 builds); a float64 call then builds the rest, the kernels called
    # by the caller first; any layout shares the one build of its dtype
    x32 = np.arange(1, 7, dtype=np.float32)
    assert _first_item_doubled(x32[::-2]) == np.float32(12)
    assert [len(k._compiled.signatures) for k in (_first_item_doubled, _first_item)] == [1, 1]
    assert _first_item(x32) == 1 and len(_first_item._compiled.signatures) == 1
    x64 = np.arange(1, 7, dtype=np.float64)
    assert _first_item_doubled(x64[1:]) == 4.0
    assert [len(k._compiled.signatures) for k in (_first_item_doubled, _first_item)] == [2, 2]
    assert _first_item(x64[::3]) == 1.0 and _first_item(x32[2:]) == np.float32(3)
    with pytest.raises(TypeError):   # a dtype no signature takes: numba's error, as before
        _first_item(np.arange(3))


def test_threads_meeting_a_fixed_signature_kernel_first_at_once_all_get_results():
    """Two threads making a kernel's first calls at once, in the dtype built second (a
    split product's parts on ember's threads): one build, no 'No matching definition'
    or 'compilation disabled' (a first build made twice left one thread holding a
    dispatcher whose pending builds the other had taken)."""
    import threading

    def last_item(x):
        return x[x.shape[0] - 1]

    for _ in range(5):
        kernel = native.Kernel(last_item, parallel=False, fastmath=False,
                               signatures=_both_floats)
        start = threading.Barrier(2)
        results, errors = [], []

        def call(start=start, kernel=kernel, results=results, errors=errors):
            start.wait()
            try:
                results.append(kernel(np.arange(1.0, 9.0)))
            except Exception as exc:  # noqa: BLE001 - the test reports what it got
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and results == [8.0, 8.0]
        assert len(kernel._compiled.signatures) == 2


def test_use_numba_switches_off_in_this_thread_only():
    assert native.enabled()
    with native.use_numba(False):
        assert not native.enabled()
        with native.use_numba(True):
            assert native.enabled()
        assert not native.enabled()
    assert native.enabled()


def test_is_cpu_array_refuses_other_array_types():
    assert native.is_cpu_array(np.zeros(2), np.ones(3))
    assert not native.is_cpu_array(np.zeros(2), [1.0])


def test_environment_switch_turns_kernels_off_and_calls_raise():
    code = (
        "from ember.ops import _native as n\n"
        "assert not n.available() and not n.enabled()\n"
        "try:\n"
        "    n.kernel(lambda a: a)(1)\n"
        "except RuntimeError as e:\n"
        "    assert 'needs numba' in str(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    env = {**os.environ, "EMBER_NO_NUMBA": "1"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def test_two_threads_may_run_parallel_kernels_at_once(tmp_path):
    """numba's workqueue layer aborts the process on concurrent launches: the kernels
    take a lock (run in a child process, so that a regression fails one test only)."""
    code = (
        "import threading\n"
        "import numpy as np\n"
        "from ember.ops import _native as native\n"
        "@native.kernel(parallel=True)\n"
        "def double(x, out):\n"
        "    for i in native.prange(x.size):\n"
        "        out[i] = 2 * x[i]\n"
        "x = np.ones(1 << 18); outs = [np.empty_like(x) for _ in range(4)]\n"
        "def work(o):\n"
        "    for _ in range(200):\n"
        "        double(x, o)\n"
        "threads = [threading.Thread(target=work, args=(o,)) for o in outs]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "assert all((o == 2).all() for o in outs)\n"
        "import numba; assert numba.threading_layer() == 'workqueue'\n"
    )
    script = tmp_path / "threads.py"  # (a file: numba caches only functions with a source)
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)


def _kernels_from(helper_source: str, scale: float):
    """A helper kernel and a kernel calling it, defined in a fresh namespace (as if in
    a module of their own), with the module constant SCALE."""
    scope = {"native": native, "SCALE": scale, "__name__": "scratch_kernels"}
    exec(helper_source + "\n"
         "helper = native.kernel(inline=True)(helper)\n"
         "def caller(x):\n"
         "    return helper(x) + 1.0\n"
         "caller = native.kernel(caller)\n", scope)
    return scope["caller"]


def test_a_build_is_named_after_the_helpers_it_inlines():
    # numba checks a cached build against its own file only: an edited helper from
    # another file must give the caller a new cache entry (the digest in its name)
    times = "def helper(x):\n    return x * SCALE\n"
    plus = "def helper(x):\n    return x + SCALE\n"
    digest = native._helpers_digest
    base = digest(_kernels_from(times, 2.0).py_func)
    assert len(base) == 10
    assert digest(_kernels_from(times, 2.0).py_func) == base          # stable
    assert digest(_kernels_from(times, 3.0).py_func) != base          # a constant
    assert digest(_kernels_from(plus, 2.0).py_func) != base           # the code
    assert native._helpers_digest(_square.py_func) == ""              # calls no kernel
    # a real build carries the digest in its name (numba names its cache files after it)
    x = np.ones((3, 2))
    out = np.empty(3)
    _sum_of_squares_rows(x, out)
    _sum_of_squares_rows.serial(x, out)
    suffix = "_" + digest(_sum_of_squares_rows.py_func)
    assert _sum_of_squares_rows._compiled.py_func.__name__.endswith(suffix)
    assert _sum_of_squares_rows._serial.py_func.__name__.endswith("_serial" + suffix)


def test_a_build_is_named_after_the_intrinsics_it_calls(monkeypatch):
    # an intrinsic's generated code is written in its module (ops/_native_vectors.py):
    # an edit there must give its callers new cache entries too
    if not native.available():
        pytest.skip("numba is not installed")
    native._load_numba()
    from ember.ops import _native_blocked_conv, _native_vectors

    kernel = _native_blocked_conv._block_pass.py_func
    base = native._helpers_digest(kernel)
    module = _native_vectors.__name__
    monkeypatch.setitem(native._sources, module, native._module_source(module) + "# edit\n")
    assert native._helpers_digest(kernel) != base
    monkeypatch.setitem(native._sources, module, native._sources[module][:-len("# edit\n")])
    assert native._helpers_digest(kernel) == base


def test_the_parallel_threshold_follows_the_thread_count(monkeypatch):
    # two threads: only arrays of millions of elements are worth a launch; more: 64K
    monkeypatch.setattr(native, "PARALLEL_MIN", native.PARALLEL_MIN)  # (restored after)
    native._set_parallel_min(2)
    assert native.PARALLEL_MIN == native.PARALLEL_MIN_TWO_THREADS == 1 << 21
    native._set_parallel_min(8)
    assert native.PARALLEL_MIN == native.PARALLEL_MIN_MORE_THREADS == 1 << 16
    native._set_parallel_min(1)
    assert native.PARALLEL_MIN == 1 << 21
