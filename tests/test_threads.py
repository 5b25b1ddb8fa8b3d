"""set_num_threads / get_num_threads drive the BLAS thread count."""

import pytest

import ember


def test_set_and_get_num_threads_round_trip():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        ember.set_num_threads(2)
        assert ember.get_num_threads() in (1, 2)  # OpenBLAS caps at the cores it has
    finally:
        ember.set_num_threads(before)
    assert ember.get_num_threads() == before
    # products still compute correctly whatever the thread count
    a = ember.ones(64, 64)
    assert (a @ a)[0, 0].item() == 64.0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_set_num_threads_rejects_bad_values(bad):
    with pytest.raises(RuntimeError):
        ember.set_num_threads(bad)


def test_interop_threads():
    assert ember.get_num_interop_threads() == 1
    ember.set_num_interop_threads(2)
