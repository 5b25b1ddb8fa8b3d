"""Shared fixtures: the `device` fixture runs a test on the CPU and, when CuPy sees a GPU,
on CUDA too (skipped cleanly otherwise)."""

import pytest

import ember

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


@pytest.fixture(params=DEVICES)
def device(request):
    """'cpu', then 'cuda' where a GPU is available."""
    return request.param


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    """A test that changes the default dtype cannot leak it into the next one."""
    yield
    ember.set_default_dtype(ember.float32)
