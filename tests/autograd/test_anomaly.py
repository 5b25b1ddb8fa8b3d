"""Anomaly detection: NaN checks in backward and the forward trace of the failing node."""

import inspect
import re
import warnings

import pytest

import ember
from ember import autograd
from ember.autograd import Function

THIS_FILE = __file__


@pytest.fixture(autouse=True)
def _anomaly_off_after():
    yield
    assert not autograd.is_anomaly_enabled(), "a test left anomaly detection on"
    assert autograd.is_anomaly_check_nan_enabled()


class NanGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * float("nan")


class NanInSecond(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad * float("nan")


class Fails(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom in backward")


def leaf(values):
    return ember.tensor(values, requires_grad=True)


def test_detect_anomaly_warns_and_toggles():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled. This mode will "
                                         "increase the runtime and should only be enabled for "
                                         "debugging."):
        mode = autograd.detect_anomaly()
    assert not autograd.is_anomaly_enabled()
    with mode:
        assert autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()
    assert not autograd.is_anomaly_enabled()
    with pytest.warns(UserWarning), autograd.detect_anomaly(check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()


def test_nan_in_backward_names_node_and_forward_line():
    x = leaf([1.0, 2.0])
    with pytest.warns(UserWarning, match="Anomaly Detection"), autograd.detect_anomaly():
        line = inspect.currentframe().f_lineno + 1
        y = NanGrad.apply(x)
        assert THIS_FILE in y.grad_fn._anomaly_trace
        with pytest.raises(RuntimeError) as info, pytest.warns(UserWarning) as caught:
            y.sum().backward()
    message = str(info.value)
    assert message.startswith("Function 'NanGradBackward' returned nan values in its 0th "
                              "output.")
    assert f'File "{THIS_FILE}", line {line}' in message
    assert "y = NanGrad.apply(x)" in message
    # As in PyTorch, a warning also points at the forward call behind the failing node.
    texts = [str(w.message) for w in caught]
    detected = [t for t in texts if t.startswith("Error detected in NanGradBackward. Traceback "
                                                 "of forward call that caused the error:")]
    assert detected and f'File "{THIS_FILE}", line {line}' in detected[0]


def test_nan_in_a_later_output_of_the_node():
    a, b = leaf([1.0]), leaf([2.0])
    with pytest.warns(UserWarning), autograd.detect_anomaly():
        y = NanInSecond.apply(a, b)
        with pytest.raises(RuntimeError, match=re.escape(
                "Function 'NanInSecondBackward' returned nan values in its 1th output.")):
            y.sum().backward()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's note on 0 / 0
def test_nan_from_a_built_in_op():
    x = leaf([0.0])
    with pytest.warns(UserWarning), autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()  # d/dx sqrt(x) at 0, times 0: 0 / 0
        with pytest.raises(RuntimeError, match=r"^Function '\w+Backward\d' returned nan values "
                                               r"in its 0th output\."):
            y.backward()


def test_no_check_without_anomaly_mode_or_with_check_nan_false():
    x = leaf([1.0])
    NanGrad.apply(x).sum().backward()
    assert x.grad.isnan().all() if hasattr(x.grad, "isnan") else x.grad.item() != x.grad.item()
    x.grad = None
    with pytest.warns(UserWarning), autograd.detect_anomaly(check_nan=False):
        NanGrad.apply(x).sum().backward()
    assert x.grad.item() != x.grad.item()  # NaN


def test_trace_is_recorded_only_in_anomaly_mode():
    x = leaf([1.0])
    assert (x * 2).grad_fn._anomaly_trace is None
    assert NanGrad.apply(x).grad_fn._anomaly_trace is None
    with autograd.set_detect_anomaly(True):
        trace = (x * 2).grad_fn._anomaly_trace
    assert THIS_FILE in trace and "test_trace_is_recorded_only_in_anomaly_mode" in trace


def test_set_detect_anomaly_acts_at_once_and_restores_as_context():
    autograd.set_detect_anomaly(True)
    try:
        assert autograd.is_anomaly_enabled()
    finally:
        autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()
    with autograd.set_detect_anomaly(True, check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
    assert not autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()


def test_other_errors_in_backward_warn_with_the_forward_trace():
    x = leaf([1.0])
    with pytest.warns(UserWarning), autograd.detect_anomaly():
        line = inspect.currentframe().f_lineno + 1
        y = Fails.apply(x)
        with pytest.raises(ValueError, match="boom in backward"), \
                pytest.warns(UserWarning, match="Error detected in FailsBackward") as caught:
            y.sum().backward()
    assert any(f"line {line}" in str(w.message) for w in caught)
    # without anomaly mode: the same error, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="boom in backward"):
            Fails.apply(x).sum().backward()
