"""ember.backends and the global numeric modes: the switches scripts set, what they
report, and the deterministic-algorithms check."""

import warnings

import pytest

import ember
from ember.backends import check_deterministic


@pytest.fixture(autouse=True)
def _restore_modes():
    yield
    ember.use_deterministic_algorithms(False)
    ember.set_float32_matmul_precision("highest")


def test_device_selection_idiom_and_availability():
    device = ("cuda" if ember.cuda.is_available() else
              "mps" if ember.backends.mps.is_available() else "cpu")
    assert device in ("cuda", "cpu")
    assert not ember.backends.cudnn.is_available() and ember.backends.cudnn.version() is None
    assert not ember.backends.mps.is_built() and not ember.backends.mkldnn.is_available()
    assert ember.backends.cuda.is_built() == ember.cuda.is_available()


def test_cudnn_switches_keep_what_is_set_and_flags_restores_them():
    cudnn = ember.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
        True, False, False, True)
    cudnn.benchmark = True
    try:
        with cudnn.flags(enabled=False, deterministic=True):
            assert not cudnn.enabled and cudnn.deterministic and not cudnn.benchmark
        assert cudnn.enabled and cudnn.benchmark and not cudnn.deterministic
    finally:
        cudnn.benchmark = False


def test_float32_matmul_precision():
    assert ember.get_float32_matmul_precision() == "highest"
    assert not ember.backends.cuda.matmul.allow_tf32
    ember.set_float32_matmul_precision("medium")
    assert ember.get_float32_matmul_precision() == "medium"
    assert ember.backends.cuda.matmul.allow_tf32
    ember.backends.cuda.matmul.allow_tf32 = False
    assert ember.get_float32_matmul_precision() == "highest"
    with pytest.warns(UserWarning, match="no effect"):
        ember.set_float32_matmul_precision("fast")
    assert ember.get_float32_matmul_precision() == "highest"
    # full float32 whatever the setting
    ember.set_float32_matmul_precision("medium")
    a = ember.tensor([[1.0 + 2 ** -20]])
    assert (a @ a).item() == pytest.approx((1.0 + 2 ** -20) ** 2, abs=1e-7)


def test_deterministic_algorithms():
    assert not ember.are_deterministic_algorithms_enabled()
    check_deterministic("an op")  # off: nothing happens
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled()
    assert not ember.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(RuntimeError, match="an op does not have a deterministic implementation"):
        check_deterministic("an op")
    ember.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
        check_deterministic("an op")
    with pytest.raises(TypeError, match="must be bool"):
        ember.use_deterministic_algorithms(1)
    # CPU kernels are deterministic: they run in deterministic mode, without warnings
    ember.use_deterministic_algorithms(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ember.zeros(3).index_add(0, ember.tensor([0, 0, 2]), ember.ones(3))
    assert out.tolist() == [2.0, 0.0, 1.0]
