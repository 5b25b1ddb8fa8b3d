"""out= of the binary arithmetic ops (add, sub, mul, div, pow, ...): the result is cast to
out's dtype when that cast is safe, written into out (resized with a warning when out held
elements of another shape) and out is returned, as in PyTorch."""

import warnings

import pytest

import ember

F32, F64, I64 = "float32", "float64", "int64"

# (op name, kwargs, input dtype, out dtype, out shape): float results into integer outs raise
CASES = [
    ("add", {}, F32, F32, (3,)),
    ("add", {"alpha": 2}, F32, F64, (3,)),
    ("add", {}, I64, F32, (3,)),
    ("add", {}, F32, I64, (3,)),
    ("add", {}, F32, "bool", (3,)),
    ("add", {}, F32, "complex64", (3,)),
    ("add", {}, F32, "float16", (3,)),
    ("add", {}, F32, F32, (5,)),
    ("add", {}, F32, F32, (0,)),
    ("add", {}, F32, F32, (2, 3)),
    ("sub", {"alpha": 2}, F32, F32, (3,)),
    ("sub", {}, I64, I64, (3,)),
    ("mul", {}, F32, F64, (3,)),
    ("mul", {}, I64, F64, (1,)),
    ("div", {}, F32, F64, (3,)),
    ("div", {}, I64, I64, (3,)),
    ("div", {"rounding_mode": "floor"}, I64, I64, (3,)),
    ("div", {"rounding_mode": "trunc"}, F32, I64, (3,)),
    ("true_divide", {}, I64, F32, (3,)),
    ("pow", {}, F32, F64, (3,)),
    ("pow", {}, I64, F32, (3,)),
    ("float_power", {}, F32, F32, (3,)),
    ("float_power", {}, F32, F64, (3,)),
    ("floor_divide", {}, I64, F32, (3,)),
    ("remainder", {}, I64, F32, (3,)),
    ("fmod", {}, F32, I64, (3,)),
    ("fmod", {}, F32, F64, (4,)),
]


def _run(lib, name, kwargs, in_dtype, out_dtype, out_shape):
    """(result values or the exception's type and text, out's dtype, warnings, out is result)"""
    a = lib.tensor([4, 5, 6], dtype=getattr(lib, in_dtype))
    b = lib.tensor([1, 2, 3], dtype=getattr(lib, in_dtype))
    out = lib.zeros(out_shape, dtype=getattr(lib, out_dtype))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = getattr(lib, name)(a, b, **kwargs, out=out)
        except RuntimeError as e:
            return type(e).__name__, str(e)
    resized = any("resized" in str(w.message) for w in caught)
    return result.tolist(), str(out.dtype).split(".")[-1], result is out, resized


def _expected_values(name, kwargs):
    a, b = [4, 5, 6], [1, 2, 3]
    rounding = kwargs.get("rounding_mode")
    ops = {"add": lambda x, y: x + kwargs.get("alpha", 1) * y,
           "sub": lambda x, y: x - kwargs.get("alpha", 1) * y,
           "mul": lambda x, y: x * y,
           "div": lambda x, y: x // y if rounding else x / y,
           "true_divide": lambda x, y: x / y, "pow": lambda x, y: x ** y,
           "float_power": lambda x, y: x ** y, "floor_divide": lambda x, y: x // y,
           "remainder": lambda x, y: x % y, "fmod": lambda x, y: x % y}
    return [ops[name](x, y) for x, y in zip(a, b)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_out_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    assert _run(ember, *case) == _run(torch, *case)


@pytest.mark.parametrize("case", [c for c in CASES if c[3] in (F32, F64) and c[4] == (3,)
                                  and not (c[0] == "float_power" and c[3] == F32)],
                         ids=lambda c: "-".join(map(str, c)))
def test_out_receives_the_values(case):
    name, kwargs = case[0], case[1]
    values, dtype, same, warned = _run(ember, *case)
    assert same and dtype == case[3] and not warned
    assert values == pytest.approx(_expected_values(name, kwargs))


def test_cast_refused_and_resize_warned():
    a = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.add(a, a, out=ember.empty(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ember.div(ember.tensor([1, 2]), 2, out=ember.empty(2, dtype=ember.int64))
    out = ember.empty(5)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[5\]"):
        assert ember.mul(a, 3, out=out) is out
    assert out.shape == (2,) and out.tolist() == [3.0, 6.0]
    empty = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        ember.sub(a, 1, out=empty)
    assert empty.tolist() == [0.0, 1.0]


def test_out_may_alias_an_input_and_a_view():
    a = ember.tensor([1.0, 2.0, 3.0])
    assert ember.add(a, a, out=a) is a and a.tolist() == [2.0, 4.0, 6.0]
    base = ember.zeros(2, 3)
    column = base[:, 0]
    ember.add(ember.ones(2), 1, out=column)
    assert base.tolist() == [[2.0, 0.0, 0.0], [2.0, 0.0, 0.0]]


def test_out_refuses_autograd_and_non_tensors():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="add\\(\\): functions with out=... arguments don't "
                                           "support automatic differentiation"):
        ember.add(x, 1, out=ember.empty(2))
    with ember.no_grad():
        assert ember.add(x, 1, out=ember.empty(2)).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        ember.add(ember.ones(2), 1, out=[1])
