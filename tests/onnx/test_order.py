"""Converters of scans without an ONNX node (cumprod, cummax/cummin, logcumsumexp) and of
order statistics (median, kthvalue, mode)."""

from __future__ import annotations

import pytest

import ember
from tests.onnx._check import check, check_fn

ORDER_OPS = {
    "cumprod": lambda x: x.cumprod(1), "cumprod_last": lambda x: x.cumprod(-1),
    "cumprod_int": lambda x: (x * 3).long().cumprod(2),
    "cummax": lambda x: tuple(x.cummax(1)), "cummin_last": lambda x: tuple(x.cummin(-1)),
    "cummax_batch_dim": lambda x: tuple(x.cummax(0)),
    "logcumsumexp": lambda x: x.logcumsumexp(2),
    "median_all": lambda x: x.median(), "median_dim": lambda x: tuple(x.median(1)),
    "median_keepdim": lambda x: tuple(x.median(-1, keepdim=True)),
    "kthvalue": lambda x: tuple(x.kthvalue(2, 1)),
    "kthvalue_keepdim": lambda x: tuple(x.kthvalue(4, -1, keepdim=True)),
    "mode": lambda x: tuple(x.mode(-1)), "mode_dim1_keepdim": lambda x: tuple(x.mode(1, True)),
}


def _data():
    """Small integers (as floats): ties and zeros exercise the index rules."""
    return (ember.randn(3, 4, 5) * 2).round()


@pytest.mark.parametrize("name", sorted(ORDER_OPS))
def test_order_op(name):
    check_fn(ORDER_OPS[name], _data())


@pytest.mark.parametrize("fn", [lambda x: x.cumprod(1), lambda x: tuple(x.cummax(1)),
                                lambda x: tuple(x.median(1)), lambda x: x.median(),
                                lambda x: tuple(x.mode(1))])
def test_dynamic_length(fn):
    """The scanned / selected dim itself is dynamic."""
    check(fn, _data(), others=[(ember.randn(2, 7, 5) * 2).round(), ember.randn(1, 1, 5)],
          input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "length"}})


def test_nan():
    x = ember.tensor([[1.0, float("nan"), 3.0, 0.5], [2.0, 1.0, 4.0, 4.0]])
    check_fn(lambda x: (tuple(x.cummax(1)), tuple(x.median(1)), x.cumprod(1), x.median()),
             x, batch=False)


def test_mode_of_bools_and_ints():
    x = ember.tensor([[1, 2, 2, 3, 3], [0, 0, 5, 5, 5]])
    check_fn(lambda x: (tuple(x.mode(1)), tuple((x > 1).mode(1))), x)


def test_nanmedian_is_refused():
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="nanmedian"):
        check_fn(lambda x: tuple(x.nanmedian(1)), _data())
