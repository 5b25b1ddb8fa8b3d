"""The method table (ember/_tensor_methods.py) stays derived: each in-place method ``name_``
comes from the INPLACE set, maps to its family's in-place op, and no name is given twice;
and the ops built by ``ops/_inplace.op_pair`` behave as one op in two forms."""

import ast
import inspect

import numpy as np
import pytest

import ember
from ember import _tensor_methods as table
from ember.ops import comparison, elementwise
from ember.ops._inplace import op_pair
from ember.testing import assert_close


@pytest.mark.parametrize("name", sorted(table.INPLACE))
def test_every_inplace_name_has_its_method(name):
    method = table.METHODS[name + "_"]
    assert getattr(ember.Tensor, name + "_") is method
    assert method is not table.METHODS[name]
    assert method.__name__.endswith("_")


def test_no_inplace_row_is_written_by_hand_when_it_can_be_derived():
    irregular = _irregular_rows()
    for key in irregular:
        base = key[:-1]
        if key.endswith("_") and base in table.METHODS:
            module = inspect.getmodule(table.METHODS[base])
            derivable = getattr(module, key, None) is table.METHODS[key]
            assert not derivable or base not in table.INPLACE, key


def test_no_name_is_given_twice():
    with pytest.raises(ValueError, match="twice"):
        table._table({"exp": 1}, {"exp": 2})
    keys = _irregular_rows()
    assert len(keys) == len(set(keys))
    source = inspect.getsource(table)
    for names in _ops_name_lists(source):
        assert len(names) == len(set(names)), names


def _irregular_rows() -> list[str]:
    tree = ast.parse(inspect.getsource(table))
    call = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "METHODS")
    return [k.value for arg in call.args if isinstance(arg, ast.Dict) for k in arg.keys]


def _ops_name_lists(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_ops":
            yield node.args[1].value.split()


UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
         "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "atanh",
         "sign", "sgn", "floor", "ceil", "trunc", "frac", "relu"]


@pytest.mark.parametrize("name", UNARY)
def test_inplace_form_writes_the_same_values_into_self(name):
    x = ember.tensor([0.25, 0.5, 0.75], dtype=ember.float64)
    expected = getattr(elementwise, name)(x)
    y = x.clone()
    out = getattr(y, name + "_")()
    assert out is y
    assert_close(y, expected)


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sqrt", "asinh"])
def test_inplace_form_keeps_the_gradient(name):
    x = ember.tensor([0.25, 0.5], dtype=ember.float64, requires_grad=True)
    getattr(x.clone(), name + "_")().sum().backward()
    inplace_grad = x.grad.clone()
    x.grad = None
    getattr(x, name)().sum().backward()
    assert_close(inplace_grad, x.grad)


def test_node_names_follow_pytorch():
    x = ember.tensor([0.5], requires_grad=True)
    assert x.clone().exp_().grad_fn.name() == "ExpBackward0"
    assert x.clone().asinh_().grad_fn.name() == "AsinhBackward1"


def test_float_functions_promote_and_refuse_integer_targets():
    assert ember.exp(ember.tensor([0, 1])).dtype is ember.float32
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ember.tensor([0, 1]).exp_()
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        ember.tensor([True]).floor_()


def test_op_pair_builds_named_documented_functions():
    def check(input):
        if input.dim() == 0:
            raise RuntimeError("no scalars")

    op, op_ = op_pair(elementwise.Exp, "my_exp", "e to the input.", check=check)
    assert (op.__name__, op_.__name__, op.__doc__) == ("my_exp", "my_exp_", "e to the input.")
    x = ember.tensor([0.0, 1.0])
    assert_close(op(x), np.exp([0.0, 1.0]), check_dtype=False)
    assert op_(x) is x and abs(x[1].item() - np.e) < 1e-6
    with pytest.raises(RuntimeError, match="no scalars"):
        op_(ember.tensor(1.0))


def test_binary_pair_builds_both_forms_of_a_comparison():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert ember.eq.__name__ == "eq" and comparison.eq_.__name__ == "eq_"
    assert ember.lt(x, 2.5).tolist() == [True, True, False]
    y = x.clone()
    assert y.lt_(2.5) is y and y.tolist() == [1.0, 1.0, 0.0]  # written in y's dtype
    ints = ember.tensor([1, 2, 3])
    assert ints.ge_(2.5).tolist() == [0, 0, 1]  # compared in float, written as int64
