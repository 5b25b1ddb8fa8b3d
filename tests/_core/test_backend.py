"""The core's deterministic-algorithms flag, set through ember.backends."""

import warnings

import numpy as np
import pytest

import ember
from ember._core import backend


@pytest.fixture(autouse=True)
def _restore():
    yield
    ember.use_deterministic_algorithms(False)


def test_backends_set_the_flag_the_core_reads():
    assert not backend.DETERMINISM.enabled
    backend.check_deterministic("an op")  # off: nothing happens
    ember.use_deterministic_algorithms(True)
    assert backend.DETERMINISM.enabled and not backend.DETERMINISM.warn_only
    assert ember.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="an op does not have a deterministic implementation"):
        backend.check_deterministic("an op")
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.is_deterministic_algorithms_warn_only_enabled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.check_deterministic("an op")
    assert len(caught) == 1 and "deterministic" in str(caught[0].message)
    ember.use_deterministic_algorithms(False)
    assert not backend.DETERMINISM.enabled and not backend.DETERMINISM.warn_only


def test_cpu_scatter_add_is_deterministic_and_allowed():
    ember.use_deterministic_algorithms(True)
    target = np.zeros(3)
    backend.scatter_add(np, target, np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]))
    assert target.tolist() == [3.0, 0.0, 3.0]
