"""embedding_bag (nn.EmbeddingBag and F.embedding_bag), recorded as one call each."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn import functional as F
from tests.onnx._check import check


class Bags(nn.Module):
    """An EmbeddingBag over 1-D indices cut at offsets."""

    def __init__(self, mode="mean", weighted=False, **kwargs):
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 3, mode=mode, **kwargs)
        self.weighted = weighted

    def forward(self, indices, offsets, weights=None):
        return self.bag(indices, offsets, weights)


def _flat_inputs(weighted=False):
    first = (ember.tensor([1, 2, 4, 5, 4, 3, 2, 9]), ember.tensor([0, 2, 2, 5]))
    other = (ember.tensor([0, 7, 3, 3, 8]), ember.tensor([0, 1, 4]))
    if weighted:
        first += (ember.rand(8),)
        other += (ember.rand(5),)
    return first, other


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("options", [{}, {"padding_idx": 4}, {"include_last_offset": True}])
def test_embedding_bag_with_offsets(mode, options):
    """Another number of indices and of bags (and an empty bag) in the same file."""
    first, other = _flat_inputs()
    check(Bags(mode, **options), first, others=[other], input_names=["indices", "offsets"],
          dynamic_axes={"indices": {0: "n"}, "offsets": {0: "bags"}})


def test_per_sample_weights():
    first, other = _flat_inputs(weighted=True)
    check(Bags("sum"), first, others=[other], input_names=["indices", "offsets", "weights"],
          dynamic_axes={"indices": {0: "n"}, "offsets": {0: "bags"}, "weights": {0: "n"}})


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_functional_2d_bags(mode):
    weight = ember.randn(10, 4)

    def fn(x, w):
        return F.embedding_bag(x, weight, mode=mode, padding_idx=0,
                               per_sample_weights=w if mode == "sum" else None)

    x = ember.tensor([[1, 2, 0], [0, 0, 0], [9, 9, 3]])
    w = ember.rand(3, 3)
    check(fn, (x, w), others=[(ember.tensor([[4, 0, 5]]), ember.rand(1, 3))],
          input_names=["x", "w"], dynamic_axes={"x": {0: "batch"}, "w": {0: "batch"}})


def test_max_norm_is_refused():
    bag = nn.EmbeddingBag(10, 3, max_norm=1.0)
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="max_norm"):
        check(bag, (ember.tensor([[1, 2], [3, 4]]),))
