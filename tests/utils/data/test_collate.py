"""Tests of ember/utils/data/collate.py: default_collate and default_convert on every
supported type, nested structures, errors, and parity with PyTorch."""

import collections

import numpy as np
import pytest

import ember
from ember.utils.data import collate, default_collate, default_convert

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

Point = collections.namedtuple("Point", "x y")


def test_tensors_are_stacked():
    out = default_collate([ember.zeros(2, 3), ember.ones(2, 3)])
    assert out.shape == (2, 2, 3) and out.dtype is ember.float32
    assert out[1].tolist() == [[1.0] * 3] * 2


def test_tensors_requiring_grad_stack_with_a_graph():
    a, b = ember.ones(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    out = default_collate([a, b])
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


def test_numpy_arrays_and_scalars():
    out = default_collate([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)])
    assert out.dtype is ember.int32 and out.tolist() == [[1, 2], [3, 4]]
    assert default_collate([np.float32(1), np.float32(2)]).dtype is ember.float32
    assert default_collate([np.bool_(True), np.bool_(False)]).dtype is ember.bool
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_python_numbers_and_strings():
    floats = default_collate([1.0, 2.5])
    assert floats.dtype is ember.float64 and floats.tolist() == [1.0, 2.5]
    ints = default_collate([1, 2])
    assert ints.dtype is ember.int64
    assert default_collate([True, False]).dtype is ember.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_mappings_namedtuples_sequences_nested():
    batch = [{"img": ember.zeros(2), "label": 1, "meta": {"name": "a", "pos": (1, 2.0)}},
             {"img": ember.ones(2), "label": 0, "meta": {"name": "b", "pos": (3, 4.0)}}]
    out = default_collate(batch)
    assert out["img"].shape == (2, 2) and out["label"].tolist() == [1, 0]
    assert out["meta"]["name"] == ["a", "b"]
    pos = out["meta"]["pos"]
    assert isinstance(pos, list) and pos[0].tolist() == [1, 3] and pos[1].dtype is ember.float64
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.tolist() == [2.0, 4.0]
    lists = default_collate([[1, 2], [3, 4]])
    assert isinstance(lists, list) and lists[0].tolist() == [1, 3]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(od, collections.OrderedDict)


def test_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])


def test_custom_collate_fn_map():
    class Box:
        def __init__(self, v):
            self.v = v

    def add(batch, *, collate_fn_map):
        return sum(x.v for x in batch)

    out = collate([Box(1), Box(2)], collate_fn_map={Box: add})
    assert out == 3


def test_default_convert():
    t = default_convert(np.array([1, 2]))
    assert isinstance(t, ember.Tensor) and t.tolist() == [1, 2]
    assert default_convert(np.float64(1.5)).dtype is ember.float64
    mixed = default_convert((np.array([1]), 2, "s"))
    assert isinstance(mixed, list) and isinstance(mixed[0], ember.Tensor) and mixed[1:] == [2, "s"]
    p = default_convert(Point(np.array([1]), 2))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor)
    assert isinstance(default_convert({"a": np.zeros(2)})["a"], ember.Tensor)
    strings = np.array(["a"])
    assert default_convert(strings) is strings
    assert default_convert(3) == 3


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_parity_with_pytorch():
    samples = [
        [1, 2], [1.0, 2.0], [True, False], [np.float32(1), np.float32(2)],
        [np.array([[1, 2]]), np.array([[3, 4]])], [(1, 2.0), (3, 4.0)],
        [{"a": 1, "b": [1.5, 2]}, {"a": 2, "b": [3.5, 4]}], [Point(1, 2), Point(3, 4)],
    ]

    def plain(x):
        if isinstance(x, (ember.Tensor, torch.Tensor)):
            return (str(x.dtype).split(".")[-1], np.asarray(x).tolist())
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, [plain(v) for v in x])
        return x

    for batch in samples:
        assert plain(default_collate(batch)) == plain(torch.utils.data.default_collate(batch))
