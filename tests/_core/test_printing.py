"""Tensor repr/str: PyTorch's text for many tensors and print options, plus hand-written
expected strings that run without PyTorch."""

import math

import numpy as np
import pytest

import ember

NAN, INF = math.nan, math.inf


@pytest.fixture(autouse=True)
def _default_options():
    yield
    ember.set_printoptions(profile="default")


def _cases(lib):
    """(name, tensor) pairs built the same way with ember and torch."""
    r = np.random.default_rng(0)
    normal = lambda *s: r.standard_normal(s)  # noqa: E731
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    return [
        ("ints", lib.tensor([1, -20, 300])),
        ("bools", lib.tensor([True, False, True])),
        ("floats", lib.tensor([1.5, -2.25, 3.0])),
        ("whole", lib.tensor([1.0, -2.0, 30.0])),
        ("negative zero", lib.tensor([-0.0, 1.0, 2.0])),
        ("negative zeros only", lib.tensor([-0.0, 0.0])),
        ("negative zero, fractions", lib.tensor([-0.0, 1.5])),
        ("zeros", lib.zeros(3)),
        ("nan inf whole", lib.tensor([NAN, INF, -INF, 1.0])),
        ("nan inf fractions", lib.tensor([NAN, INF, -INF, 1.5])),
        ("only nan", lib.tensor([NAN, NAN])),
        ("sci large", lib.tensor([1e10, 1.0])),
        ("sci small", lib.tensor([1e-5, 1.0])),
        ("sci range", lib.tensor([1e-2, 1e3, 5.5])),
        ("sci with nan", lib.tensor([-1.5e-7, 2.0, NAN])),
        ("large whole", lib.tensor([123456789.0, 1.0])),
        ("rounding", lib.tensor([0.00005, 0.99995, 1.23456789])),
        ("scalar", lib.tensor(3.14159)),
        ("scalar int", lib.tensor(7)),
        ("scalar nan", lib.tensor(NAN)),
        ("float64", lib.tensor([1.1, 2.2], dtype=lib.float64)),
        ("float16", lib.tensor([1.1, 2.2], dtype=lib.float16)),
        ("bfloat16", lib.tensor([1.1, 2.2], dtype=lib.bfloat16)),
        ("int32", lib.tensor([1, 2], dtype=lib.int32)),
        ("uint8", lib.tensor([1, 255], dtype=lib.uint8)),
        ("matrix float64", lib.tensor(normal(3, 4))),
        ("matrix", lib.tensor(f32(normal(3, 4)))),
        ("3-d", lib.tensor(f32(normal(2, 3, 4)))),
        ("wraps lines", lib.tensor(f32(normal(30)))),
        ("wide ints", lib.arange(40) * 1000),
        ("summarized 1-d", lib.tensor(f32(normal(2000)))),
        ("summarized 2-d", lib.tensor(f32(normal(50, 50)))),
        ("summarized 3-d", lib.tensor(f32(normal(11, 10, 12)))),
        ("summarized ints", lib.arange(1200).reshape(30, 40)),
        ("summarized sci", lib.tensor(f32(normal(1500) * 1e6))),
        ("complex", lib.tensor([1 + 2j, -3.5 - 0.5j, 0j])),
        ("complex whole", lib.tensor([1 + 2j, -3 - 1j])),
        ("complex128", lib.tensor([1.25 + 2j], dtype=lib.complex128)),
        ("complex scalar", lib.tensor(1 - 2j)),
        ("complex negative zeros", lib.tensor([complex(1, -0.0), complex(-0.0, 2)])),
        ("complex matrix", lib.tensor(normal(3, 3) + 1j * normal(3, 3))),
        ("complex summarized", lib.tensor((normal(1200) + 1j).astype(np.complex64))),
        ("complex sci", lib.tensor([1e-6 + 1j, 3 + 4e5j])),
        ("requires_grad", lib.tensor([1.0, 2.0], requires_grad=True)),
        ("grad_fn", x * 2),
        ("grad_fn float64", (lib.tensor([1.0, 2.0], dtype=lib.float64,
                                        requires_grad=True) * 2).sum()),
        ("suffixes wrap", lib.tensor(normal(8), dtype=lib.float64, requires_grad=True) * 1),
        ("last line wraps", lib.tensor(f32(normal(7) * 100), requires_grad=True) * 1),
        ("empty", lib.tensor([])),
        ("empty 2-d", lib.zeros(0, 3)),
        ("empty int", lib.zeros(0, dtype=lib.int64)),
    ]


OPTIONS = [{}, {"threshold": 5}, {"precision": 2}, {"sci_mode": True}, {"sci_mode": False},
           {"edgeitems": 1, "threshold": 10}, {"linewidth": 40}, {"profile": "short"},
           {"edgeitems": 0, "threshold": 3}]


def _texts(lib, options):
    lib.set_printoptions(**options)
    try:
        return {name: (repr(t), str(t)) for name, t in _cases(lib)}
    finally:
        lib.set_printoptions(profile="default")


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: str(o) or "default")
def test_repr_and_str_match_pytorch(options):
    torch = pytest.importorskip("torch")
    ours, theirs = _texts(ember, options), _texts(torch, options)
    for name in ours:
        expected = tuple(text.replace("torch.", "ember.") for text in theirs[name])
        assert ours[name] == expected, name


EXPECTED = [
    # the width is that of the finite non-zero values: -0. sticks out
    (lambda: ember.tensor([-0.0, 1.0, 2.0]), "tensor([-0., 1., 2.])"),
    (lambda: ember.tensor([-0.0, 1.5]), "tensor([-0.0000, 1.5000])"),
    (lambda: ember.tensor([NAN, INF, -INF, 1.0]), "tensor([nan, inf, -inf, 1.])"),
    (lambda: ember.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: ember.tensor([1, -20, 300]), "tensor([  1, -20, 300])"),
    (lambda: ember.tensor([True, False]), "tensor([ True, False])"),
    (lambda: ember.tensor([1 + 2j, -3.5 - 0.5j, 0j]),
     "tensor([ 1.0000+2.0000j, -3.5000-0.5000j,  0.0000+0.0000j])"),
    (lambda: ember.tensor([1.25 + 2j], dtype=ember.complex128),
     "tensor([1.2500+2.j], dtype=ember.complex128)"),
    (lambda: ember.tensor(1 - 2j), "tensor(1.-2.j)"),
    (lambda: ember.arange(2000.0), "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., "
                                   "1.9970e+03, 1.9980e+03,\n        1.9990e+03])"),
    (lambda: ember.arange(1200).reshape(30, 40),
     "tensor([[   0,    1,    2,  ...,   37,   38,   39],\n"
     "        [  40,   41,   42,  ...,   77,   78,   79],\n"
     "        [  80,   81,   82,  ...,  117,  118,  119],\n"
     "        ...,\n"
     "        [1080, 1081, 1082,  ..., 1117, 1118, 1119],\n"
     "        [1120, 1121, 1122,  ..., 1157, 1158, 1159],\n"
     "        [1160, 1161, 1162,  ..., 1197, 1198, 1199]])"),
    (lambda: ember.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: ember.tensor([1.0, 2.0], requires_grad=True) * 2,
     "tensor([2., 4.], grad_fn=<MulBackward0>)"),
    (lambda: ember.linspace(0, 1, 8, dtype=ember.float64).requires_grad_(),
     "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000],\n"
     "       dtype=ember.float64, requires_grad=True)"),
]


@pytest.mark.parametrize("make, expected", EXPECTED, ids=lambda v: None)
def test_expected_strings(make, expected):
    t = make()
    assert repr(t) == expected and str(t) == expected


def test_threshold_and_edgeitems_options():
    values = ember.arange(10.0)
    ember.set_printoptions(threshold=5)
    assert repr(values) == "tensor([0., 1., 2.,  ..., 7., 8., 9.])"
    ember.set_printoptions(edgeitems=1)
    assert repr(values) == "tensor([0.,  ..., 9.])"
    ember.set_printoptions(edgeitems=0)
    assert repr(values) == "tensor([...], size=(10,))"
    ember.set_printoptions(profile="full")
    assert "..." not in repr(ember.arange(2000.0))
    ember.set_printoptions(profile="default", precision=2, sci_mode=False)
    assert repr(ember.tensor([1e-5, 1.0])) == "tensor([0.00, 1.00])"
    from ember._core.printing import get_printoptions

    assert get_printoptions() == {"precision": 2, "threshold": 1000, "edgeitems": 3,
                                  "linewidth": 80, "sci_mode": False}
