"""Converters of products: linear layers, matmul and friends, einsum, embedding."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn import functional as F
from tests.onnx._check import check_fn, op_types


def test_linear_is_one_gemm_on_the_parameter():
    layer = nn.Linear(4, 3)
    proto = check_fn(layer, ember.randn(5, 4))
    assert op_types(proto) == {"Gemm"}
    assert {i.name for i in proto.graph.initializer} == {"weight", "bias"}


@pytest.mark.parametrize("bias", [True, False])
def test_linear_on_3d_input(bias):
    check_fn(nn.Linear(4, 3, bias=bias), ember.randn(2, 5, 4))


def test_bilinear():
    check_fn(nn.Bilinear(3, 4, 2), ember.randn(5, 3), ember.randn(5, 4))


PRODUCTS = {
    "matmul": lambda a, b: a @ b.transpose(-1, -2), "bmm": lambda a, b: ember.bmm(
        a, b.transpose(1, 2)), "mm": lambda a, b: ember.mm(a[0], b[0].t()),
    "mv": lambda a, b: ember.mv(a[0], b[0, 0]), "dot": lambda a, b: ember.dot(a[0, 0], b[0, 0]),
    "addmm": lambda a, b: ember.addmm(a[0, :, :3], a[0], b[0].t(), beta=0.5, alpha=2),
    "baddbmm": lambda a, b: ember.baddbmm(a[:, :, :3], a, b.transpose(1, 2), alpha=0.5),
    "addmv": lambda a, b: ember.addmv(a[0, 0, :3], a[0].t(), b[0, :, 0][:3]),
    "addr": lambda a, b: ember.addr(a[0, :3, :3], a[0, 0, :3], b[0, 0, :3]),
    "addbmm": lambda a, b: ember.addbmm(a[0, :, :3], a, b.transpose(1, 2)),
    "einsum_bmm": lambda a, b: ember.einsum("bij,bkj->bik", a, b),
    "einsum_transpose": lambda a, b: ember.einsum("bij->bji", a),
    "einsum_outer": lambda a, b: ember.einsum("i,j->ij", a[0, 0], b[0, 0]),
    "einsum_sum": lambda a, b: ember.einsum("bij,bij->b", a, b),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_product(name):
    check_fn(PRODUCTS[name], ember.randn(2, 3, 3), ember.randn(2, 3, 3), batch=False)


def test_embedding():
    emb = nn.Embedding(10, 4, padding_idx=0)
    proto = check_fn(emb, ember.randint(0, 10, (3, 5)))
    assert op_types(proto) == {"Gather"}


def test_functional_embedding():
    weight = ember.randn(7, 3)
    check_fn(lambda i: F.embedding(i, weight) * 2, ember.randint(0, 7, (2, 4)))
