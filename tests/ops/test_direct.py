"""ops/_direct.py: arithmetic, linear layers and relu on the arrays when nothing is
recorded.

The direct path must give what the general path (`Function.apply`) gives, bit for bit,
and step aside whenever the general path has more to do: recording, an observer (the
profiler, autocast), other dtypes, subclasses, errors.
"""

import operator

import numpy as np
import pytest

import ember
from ember.ops import arithmetic
from ember.ops._direct import direct, plain_linear, records

OPS = [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
       ("div", operator.truediv)]


def _record_applies(monkeypatch, *classes) -> list:
    """A list that gets the class name each time one of `classes` runs through
    `Function.apply`."""
    calls = []
    for cls in classes:
        real = cls.apply.__func__

        def spy(cls_, *args, _real=real, **params):
            calls.append(cls_.__name__)
            return _real(cls_, *args, **params)
        monkeypatch.setattr(cls, "apply", classmethod(spy))
    return calls


@pytest.fixture
def general_calls(monkeypatch):
    """Each Function of arithmetic.py that ran through `apply`, by name."""
    return _record_applies(monkeypatch, arithmetic.Add, arithmetic.Sub, arithmetic.Mul,
                           arithmetic.Div)


@pytest.mark.parametrize("name,op", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_direct_equals_the_general_path(name, op, dtype, general_calls):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(dtype)
    b = rng.standard_normal((4,)).astype(dtype) + 3
    x, y = ember.tensor(a), ember.tensor(b)
    with ember.no_grad():
        fast = [getattr(ember, name)(x, y), getattr(ember, name)(x, 2.5),
                getattr(ember, name)(x, 3)]
    assert general_calls == []
    expected = [op(a, b), op(a, 2.5), op(a, 3.0)]
    for got, want in zip(fast, expected):
        assert got.dtype == x.dtype and got.grad_fn is None
        np.testing.assert_array_equal(got.numpy(), want)
    # the general path (a Parameter is a subclass: not taken directly) agrees
    general = getattr(ember, name)(ember.nn.Parameter(x.clone(), requires_grad=False), y)
    assert general_calls == [{"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}[name]]
    np.testing.assert_array_equal(general.numpy(), fast[0].numpy())


def test_operators_of_tensors_that_need_no_grad_go_direct(general_calls):
    x = ember.arange(6.0).reshape(2, 3)
    y = (x * x + 1) / 2 - x
    assert general_calls == []
    np.testing.assert_array_equal(y.numpy(), (np.arange(6.0).reshape(2, 3) ** 2 + 1) / 2
                                  - np.arange(6.0).reshape(2, 3))


def test_recording_takes_the_general_path(general_calls):
    w = ember.ones(3, requires_grad=True)
    y = w * 2
    assert y.grad_fn is not None and general_calls == ["Mul"]
    with ember.no_grad():
        z = w * 2
    assert z.grad_fn is None and not z.requires_grad and general_calls == ["Mul"]


def test_profiler_sees_ops_under_no_grad():
    x = ember.ones(4)
    with ember.no_grad(), ember.profiler.profile() as prof:
        x * x
    assert [e.key for e in prof.key_averages()] == ["mul"]


def test_other_operands_step_aside():
    x = ember.ones(2)
    assert direct(operator.mul, x, ember.ones(2, dtype=ember.float64)) is None  # promotion
    assert direct(operator.mul, ember.ones(2, dtype=ember.int64), 2) is None  # integers
    assert direct(operator.mul, x, True) is None  # bool is not a number here
    assert direct(operator.mul, 2.0, x) is None
    assert direct(operator.mul, x, np.float32(2)) is None


def test_shape_errors_keep_pytorchs_wording():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\)"):
        with ember.no_grad():
            ember.ones(3) * ember.ones(4)


def test_zero_dim_results_are_arrays():
    with ember.no_grad():
        y = ember.tensor(2.0) * ember.tensor(3.0)
    assert y.shape == () and type(y._data) is np.ndarray and y.item() == 6.0


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inference_linear_equals_the_recorded_one(with_bias, dtype):
    layer = ember.nn.Linear(7, 5, bias=with_bias).to(ember.float32 if dtype == np.float32
                                                      else ember.float64)
    x = ember.tensor(np.random.default_rng(1).standard_normal((3, 7)).astype(dtype))
    recorded = layer(x)  # the weight requires grad: addmm through Function.apply
    assert recorded.grad_fn is not None
    with ember.no_grad():
        direct_out = layer(x)
    assert direct_out.grad_fn is None and direct_out.dtype == recorded.dtype
    np.testing.assert_array_equal(direct_out.numpy(), recorded.detach().numpy())


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 1, 4, 7)])
def test_inference_linear_of_more_dims_equals_the_recorded_one(with_bias, shape):
    # (N, S, E) activations fold into rows on the arrays, as the recorded path folds
    # them into one addmm; a non-contiguous input takes the general path
    layer = ember.nn.Linear(7, 5, bias=with_bias)
    x = ember.tensor(np.random.default_rng(2).standard_normal(shape).astype(np.float32))
    recorded = layer(x)
    assert recorded.grad_fn is not None
    with ember.no_grad():
        direct_out = layer(x)
        strided = layer(x.transpose(0, 1))
    assert direct_out.grad_fn is None and direct_out.shape == recorded.shape
    np.testing.assert_array_equal(direct_out.numpy(), recorded.detach().numpy())
    np.testing.assert_allclose(strided.numpy(), recorded.detach().numpy().swapaxes(0, 1),
                               rtol=1e-6, atol=1e-6)


def test_linear_steps_aside_when_it_should():
    w, b = ember.ones(4, 3), ember.ones(4)
    assert plain_linear(ember.ones(2, 3), w, b)
    assert not plain_linear(ember.ones(2, 2, 3), w, b)           # 3-D input
    assert not plain_linear(ember.ones(2, 5), w, b)              # sizes: the error
    assert not plain_linear(ember.ones(2, 3, dtype=ember.float64), w, b)  # dtypes
    assert not plain_linear(ember.ones(2, 3), w, ember.ones(5))  # bias size
    assert not plain_linear(ember.ones(2, 3, dtype=ember.float16), w.half(), b.half())
    assert records(ember.ones(2, 3), w.requires_grad_(), b)      # then recorded, not direct
    w.requires_grad_(False)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        ember.nn.functional.linear(ember.ones(2, 5), w, b)
    with ember.no_grad(), ember.profiler.profile() as prof:
        ember.nn.functional.linear(ember.ones(2, 3), w, b)
    assert "add_product" in [e.key for e in prof.key_averages()]  # (the general path)


def test_inference_relu_equals_the_recorded_one():
    x = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, -2.5, 3.0], np.float32)
    t = ember.tensor(x, requires_grad=True)
    recorded = ember.nn.functional.relu(t)
    with ember.no_grad():
        direct_out = ember.nn.functional.relu(t)
    assert recorded.grad_fn is not None and direct_out.grad_fn is None
    np.testing.assert_array_equal(direct_out.numpy(), recorded.detach().numpy())
    np.testing.assert_array_equal(np.signbit(direct_out.numpy()),
                                  np.signbit(recorded.detach().numpy()))
    ints = ember.nn.functional.relu(ember.tensor([-1, 2]))
    assert ints.dtype == ember.int64 and ints.tolist() == [0, 2]


def test_every_spelling_of_relu_goes_direct_at_inference(monkeypatch):
    from ember.ops.elementwise import Relu
    calls = _record_applies(monkeypatch, Relu)
    x = ember.tensor([-1.0, 2.0])
    with ember.no_grad():
        outs = [ember.relu(x), x.relu(), ember.nn.functional.relu(x), ember.nn.ReLU()(x)]
    assert calls == [] and all(o.tolist() == [0.0, 2.0] for o in outs)
    ember.relu(ember.tensor([-1.0, 2.0], requires_grad=True))  # recorded: the Function
    assert calls == ["Relu"]


@pytest.mark.parametrize("log", [False, True])
def test_inference_softmax_equals_the_recorded_one(log, monkeypatch):
    from ember.ops.activation import LogSoftmax, Softmax
    calls = _record_applies(monkeypatch, LogSoftmax if log else Softmax)
    fn = ember.nn.functional.log_softmax if log else ember.nn.functional.softmax
    x = np.random.default_rng(2).standard_normal((4, 9)).astype(np.float32)
    x[0, 0] = -np.inf
    t = ember.tensor(x, requires_grad=True)
    recorded = fn(t, dim=1)
    with ember.no_grad():
        direct_out = fn(t, dim=1)
        over_rows = fn(t, dim=0)  # not the last dim: another array path, same rule
    assert recorded.grad_fn is not None and direct_out.grad_fn is None
    assert len(calls) == 1  # only the recorded call ran the Function
    np.testing.assert_array_equal(direct_out.numpy(), recorded.detach().numpy())
    np.testing.assert_array_equal(over_rows.numpy(), fn(t, dim=0).detach().numpy())


def test_inference_convolution_equals_the_recorded_one(monkeypatch):
    from ember.ops.conv import Convolution
    calls = _record_applies(monkeypatch, Convolution)
    conv = ember.nn.Conv2d(3, 4, 3, padding=1)
    x = ember.tensor(np.random.default_rng(4).standard_normal((2, 3, 6, 5)).astype(np.float32))
    recorded = conv(x)
    with ember.no_grad():
        direct_out = conv(x)
        unbatched = conv(x[0])
    assert recorded.grad_fn is not None and direct_out.grad_fn is None
    assert len(calls) == 1  # only the recorded call ran the Function
    np.testing.assert_array_equal(direct_out.numpy(), recorded.detach().numpy())
    # (one image is a product of other row counts, which BLAS may round differently)
    np.testing.assert_allclose(unbatched.numpy(), recorded.detach().numpy()[0], rtol=1e-6,
                               atol=1e-6)
    with ember.no_grad(), ember.profiler.profile() as prof:
        conv(x)
    assert "convolution" in [e.key for e in prof.key_averages()]  # watched: the op runs
