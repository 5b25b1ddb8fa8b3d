"""Converters of reductions."""

from __future__ import annotations

import pytest

import ember
from tests.onnx._check import check_fn

REDUCTIONS = {
    "sum_all": lambda x: x.sum(), "sum_dims": lambda x: x.sum((1, 2), keepdim=True),
    "sum_int": lambda x: (x > 0).sum(1), "mean": lambda x: x.mean(-1),
    "mean_all": lambda x: x.mean(), "prod": lambda x: x.prod(1), "amax": lambda x: x.amax(
        (0, 2)), "amin": lambda x: x.amin(1, keepdim=True), "max_all": lambda x: x.max(),
    "min_all": lambda x: x.min(), "max_dim": lambda x: x.max(1),
    "min_dim_keepdim": lambda x: x.min(2, keepdim=True), "argmax_via_max": lambda x: x.max(
        -1)[1], "var": lambda x: x.var(1), "std": lambda x: x.std((1, 2), correction=0),
    "var_mean": lambda x: ember.var_mean(x, 2), "logsumexp": lambda x: x.logsumexp(1),
    "std_mean_keepdim": lambda x: ember.std_mean(x, (1, 2), keepdim=True),
    "aminmax_dim": lambda x: tuple(x.aminmax(dim=1)), "aminmax_all": lambda x: tuple(x.aminmax()),
    "argmax": lambda x: x.argmax(1), "argmin_keepdim": lambda x: x.argmin(-1, keepdim=True),
    "argmax_all": lambda x: x.argmax(), "argmin_all_keepdim": lambda x: x.argmin(keepdim=True),
    "all": lambda x: (x > -1).all(2), "any_keepdim": lambda x: (x > 1).any(1, keepdim=True),
    "all_float": lambda x: x.all(), "count_nonzero": lambda x: (x > 0).count_nonzero((1, 2)),
    "one_hot": lambda x: ember.nn.functional.one_hot(x.argmax(1), 5),
    "nonzero_sum": lambda x: (x > 0).nonzero().sum(0),
    "norm2": lambda x: x.norm(dim=1), "norm1": lambda x: x.norm(1, dim=2),
    "norm_inf": lambda x: x.norm(float("inf"), dim=1), "norm3": lambda x: x.norm(3, dim=-1),
    "vector_norm": lambda x: ember.linalg.vector_norm(x, 2, dim=(1, 2)),
    "sort": lambda x: x.sort(1), "sort_descending": lambda x: x.sort(-1, descending=True),
    "topk": lambda x: x.topk(2, dim=2), "topk_smallest": lambda x: x.topk(3, 1, largest=False),
    "nansum": lambda x: ember.nansum(ember.log(x), 1), "cumsum": lambda x: x.cumsum(1),
    "cumsum_int": lambda x: (x > 0).cumsum(2),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name):
    check_fn(REDUCTIONS[name], ember.randn(3, 4, 5))


@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_axes_attribute_or_input(opset):
    check_fn(lambda x: (x.mean(1), x.amax(2), x.sum(0)), ember.randn(3, 4, 5), opset=opset)
