"""Shared fixtures: the `device` fixture runs a test on the CPU and, when CuPy sees a GPU,
on CUDA too (skipped cleanly otherwise); `on_two_threads` runs one with ember's threads
set to two; `workers_asleep` waits for ember's workers to sleep."""

import gc
import time

import pytest

import ember
from ember.ops import _native

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU (skipped without one)")


def pytest_collection_modifyitems(config, items):
    if ember.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session):
    """Move what the imports made (ember, numba, PyTorch, the test modules) out of the
    garbage collector's sight, so that tests calling ``gc.collect()`` scan only their own
    objects: with numba and PyTorch loaded a full collection took ~0.25 s, and the op
    table's no-cycle test alone spent 107 s in it."""
    _native.available()  # (imports numba now, so that its objects are frozen too)
    gc.collect()
    gc.freeze()


@pytest.fixture(params=DEVICES)
def device(request):
    """'cpu', then 'cuda' where a GPU is available."""
    return request.param


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    """A test that changes the default dtype cannot leak it into the next one."""
    yield
    ember.set_default_dtype(ember.float32)


@pytest.fixture
def on_two_threads():
    """ember on two threads (the caller and one worker) for the test, then as before."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


@pytest.fixture
def workers_asleep():
    """A function that waits (5 s at most) until all of ember's workers sleep on their
    events, past their polls, and returns the first."""
    from ember.ops import _workers

    def wait():
        deadline = time.monotonic() + 5
        while not all(w._sleeping for w in _workers.workers()):
            assert time.monotonic() < deadline, "a worker never went to sleep"
            time.sleep(0.005)
        return _workers.workers()[0]
    return wait


@pytest.fixture
def no_blocked_conv(monkeypatch):
    """The register-blocked 3x3 kernels (ops/_native_blocked_conv.py) switched off, for
    tests of the paths they would otherwise take first (where numba runs at all)."""
    from ember.ops import _native as native

    if native.available():
        from ember.ops import _native_blocked_conv

        monkeypatch.setattr(_native_blocked_conv, "ENABLED", False)
