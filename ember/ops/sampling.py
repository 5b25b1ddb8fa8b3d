"""The sampling functions: rand, randn, randint, randperm, normal, bernoulli, multinomial,
poisson, their ``*_like`` forms, and the in-place samplers of Tensor (``uniform_``,
``normal_``, ...).

Each draws from a generator of ``ember/random.py``: the default one of the output's
device, or the ``generator=`` given.  The samples are not reparameterized: as in
PyTorch, gradients with respect to distribution parameters (``normal``'s mean and std,
``bernoulli``'s probabilities) are zero.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.device import factory_device
from .._core.function import Function
from .._core.memory_format import like_format
from .._core.tensor import Tensor, _make
from ..random import _generator_for
from ._broadcast import broadcast_shapes
from ._util import check_layout, result_type, size_args, xp_of
from .creation import _like, _shape_arg

class _Sampled(Function):
    """Attaches a sampled value to the graph: like PyTorch, its gradient with respect to
    the distribution's parameters is zero (the samplers are not reparameterized)."""

    @staticmethod
    def forward(ctx, *inputs, value, name):
        ctx._name = name
        ctx.shapes = [getattr(a, "shape", None) for a in inputs]
        return value

    @staticmethod
    def backward(ctx, grad):
        xp = xp_of(grad._data)
        return tuple(None if shape is None else _make(xp.zeros(shape, dtype=grad._data.dtype))
                     for shape in ctx.shapes)


class _SampledInplace(_Sampled):
    """In-place samplers (``uniform_``...): the old value is overwritten, its gradient is 0."""

    _inplace = True


def _setup(size, dtype, device, generator, default=None):
    d = (default or dtypes.get_default_dtype()) if dtype is None else dtypes.to_dtype(dtype)
    dev = factory_device(device)
    gen = _generator_for(dev, generator)
    xp, src = gen._source()
    return d, xp, src, (None if size is None else _shape_arg(size))


def _finish(array, requires_grad: bool, out=None) -> Tensor:
    result = _make(array)
    if requires_grad:
        result.requires_grad_(True)
    if out is not None:
        return out.copy_(result)
    return result


def _require_float(op: str, d) -> None:
    if not (d.is_floating_point or d.is_complex):
        raise NotImplementedError(f"\"{op}\" not implemented for '{_SHORT.get(d.name, d.name)}'")


_SHORT = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool"}


_C_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char"}


def _work_dtype(d):
    """float64 stays float64; every other float type is sampled in float32 and cast."""
    return np.float64 if d.np_dtype in (np.float64, np.complex128) else np.float32


def _uniform(xp, src, shape, d):
    """Uniform [0, 1) values of dtype `d` (complex: both parts uniform)."""
    if d.is_complex:
        parts = src.uniform((2,) + tuple(shape), _work_dtype(d))
        return (parts[0] + 1j * parts[1]).astype(d.np_dtype)
    u = src.uniform(shape, _work_dtype(d))
    if u.dtype != d.np_dtype:
        # NOTE: rounding to a narrower float could reach 1.0; keep the interval half-open
        info = _finfo(d)
        u = xp.minimum(u, 1.0 - info.epsneg).astype(d.np_dtype)
    return u


def _finfo(d):
    if d is dtypes.bfloat16:
        import ml_dtypes

        return ml_dtypes.finfo(d.np_dtype)
    return np.finfo(d.np_dtype)


def _normal(xp, src, shape, d):
    if d.is_complex:
        parts = src.normal((2,) + tuple(shape), _work_dtype(d)) * np.sqrt(0.5)
        return (parts[0] + 1j * parts[1]).astype(d.np_dtype)
    return src.normal(shape, _work_dtype(d)).astype(d.np_dtype, copy=False)


def _float_samples(op: str, kernel: str, draw, args, size, dtype, layout, device, generator,
                   requires_grad: bool, out) -> Tensor:
    """The body of rand / randn: `draw(xp, src, shape, dtype)` samples of a float or complex
    dtype (`kernel` names the PyTorch kernel in the error for other dtypes)."""
    check_layout(op, layout)
    d, xp, src, shape = _setup(size_args(op, args, size), dtype, device, generator)
    _require_float(kernel, d)
    return _finish(draw(xp, src, shape, d), requires_grad, out)


def rand(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uniform samples from [0, 1) in a tensor of shape `size`."""
    return _float_samples("rand", "check_uniform_bounds", _uniform, args, size, dtype, layout,
                          device, generator, requires_grad, out)


def randn(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Standard normal samples (mean 0, variance 1) in a tensor of shape `size`."""
    return _float_samples("randn", "normal_kernel_cpu", _normal, args, size, dtype, layout,
                          device, generator, requires_grad, out)


def _integers(xp, src, low: int, high: int, shape, d):
    """Integers in [low, high) as dtype `d`."""
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    if not (d.is_floating_point or d.is_complex) and d is not dtypes.bool:
        info = np.iinfo(d.np_dtype)
        if low < info.min:
            raise RuntimeError(f"from is out of bounds for {_C_NAMES[d.name]}")
        if high - 1 > info.max:
            raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[d.name]}")
    return src.integers(int(low), int(high) - 1, shape).astype(d.np_dtype)


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad: bool = False,
            pin_memory: bool = False) -> Tensor:
    """Random integers in [low, high) (`low` defaults to 0) in a tensor of shape `size`:
    ``randint(high, size)`` or ``randint(low, high, size)``; int64 unless `dtype` says."""
    check_layout("randint", layout)
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if size is None and len(args) == 2 and low is None and high is None:
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{type(args[1]).__name__}")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError(f"randint(): argument 'size' (position {len(args)}) must be tuple of "
                        f"ints, not {type(args[-1]).__name__}")
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: 'high' and 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{type(size).__name__}")
    low = 0 if low is None else int(low)
    d, xp, src, shape = _setup(size, dtype, device, generator, default=dtypes.int64)
    return _finish(_integers(xp, src, low, int(high), shape, d), requires_grad, out)


def randperm(n: int, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 unless `dtype` says)."""
    check_layout("randperm", layout)
    n = int(n)
    d, xp, src, _ = _setup((n,), dtype, device, generator, default=dtypes.int64)
    return _finish(src.permutation(n).astype(d.np_dtype), requires_grad, out)


def _samples_like(op: str, sample, input: Tensor, generator, dtype, layout, device,
                  requires_grad: bool, memory_format) -> Tensor:
    """The body of rand_like / randn_like: `sample` (rand or randn) in `input`'s shape."""
    check_layout(op, layout)
    d, dev = _like(input, dtype, device)
    return like_format(sample(tuple(input.shape), generator=generator, dtype=d, device=dev,
                              requires_grad=requires_grad), input, memory_format)


def rand_like(input: Tensor, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """``rand`` with the shape (and by default dtype and device) of `input`."""
    return _samples_like("rand_like", rand, input, generator, dtype, layout, device,
                         requires_grad, memory_format)


def randn_like(input: Tensor, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """``randn`` with the shape (and by default dtype and device) of `input`."""
    return _samples_like("randn_like", randn, input, generator, dtype, layout, device,
                         requires_grad, memory_format)


def randint_like(input: Tensor, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """``randint`` with the shape (and by default dtype) of `input`: ``randint_like(x, high)``
    or ``randint_like(x, low, high)``."""
    check_layout("randint_like", layout)
    if high is None:
        low, high = 0, low
    d, dev = _like(input, dtype, device)
    return like_format(randint(int(low), int(high), tuple(input.shape), generator=generator,
                               dtype=d, device=dev, requires_grad=requires_grad), input,
                       memory_format)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None,
           layout=None, device=None, pin_memory: bool = False,
           requires_grad: bool = False) -> Tensor:
    """Normal samples with the given mean and standard deviation.

    `mean` and `std` may be tensors (their broadcast shape is the output's) or numbers
    (then `size` gives the shape).  The gradient with respect to tensor arguments is zero,
    as in PyTorch.
    """
    check_layout("normal", layout)
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if isinstance(std, Tensor):
        if bool((std.detach().cpu_array() < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if not tensors:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: with a "
                            "float mean and std, 'size' is required")
        d, xp, src, shape = _setup(size, dtype, device, generator)
        _require_float("normal_kernel_cpu", d)
        value = (_normal(xp, src, shape, d) * std + mean).astype(d.np_dtype, copy=False)
        return _finish(value, requires_grad, out)

    shape = broadcast_shapes(*[tuple(t.shape) for t in tensors])
    d = result_type(*tensors)
    _require_float("normal_kernel_cpu", d)
    d, xp, src, shape = _setup(shape, d, tensors[0].device, generator)
    arrays = [t._data if isinstance(t, Tensor) else t for t in (mean, std)]
    value = (_normal(xp, src, shape, d) * arrays[1] + arrays[0]).astype(d.np_dtype, copy=False)
    name = {(True, False): "NormalBackward1", (False, True): "NormalBackward2"}.get(
        (isinstance(mean, Tensor), isinstance(std, Tensor)), "NormalBackward3")
    result = _Sampled.apply(*tensors, value=value, name=name)
    return result if out is None else out.copy_(result)


def _check_probability(p) -> None:
    """RuntimeError unless every probability (a number or a backend array) is in [0, 1]."""
    if isinstance(p, (int, float)):
        ok = 0 <= p <= 1
    else:
        ok = bool(((p >= 0) & (p <= 1)).all())
    if not ok:
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples: 1 with probability `p` (by default, the value of each element of
    `input`); the result has `input`'s shape and dtype."""
    d = input.dtype
    _require_float("bernoulli_tensor_cpu_p_", d)
    probs = input._data if p is None else p
    _check_probability(probs)
    _, xp, src, shape = _setup(tuple(input.shape), d, input.device, generator)
    u = src.uniform(shape, _work_dtype(d))
    value = (u < probs).astype(d.np_dtype)
    if p is None and input.requires_grad:
        result = _Sampled.apply(input, value=value, name="BernoulliBackward0")
    else:
        result = _make(value)
    return result if out is None else out.copy_(result)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None,
                out=None) -> Tensor:
    """Indices drawn from the categorical distributions given by the rows of `input`
    (non-negative weights, not necessarily normalized); without replacement an index
    appears at most once per row."""
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_SHORT.get(input.dtype.name, input.dtype.name)}")
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    w = input._data.reshape(-1, n).astype(np.float64)
    xp = xp_of(w)
    if not bool(xp.isfinite(w).all()) or bool((w < 0).any()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = w.sum(axis=1, keepdims=True)
    if bool((total <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = w.shape[0]
    _, xp, src, _ = _setup(None, dtypes.float64, input.device, generator)
    if replacement:
        # inverse CDF: all rows in one searchsorted, row r shifted into [r, r + 1]
        cdf = xp.cumsum(w, axis=1) / total
        cdf[:, -1] = 1.0
        shift = xp.arange(rows, dtype=np.float64)[:, None]
        u = src.uniform((rows, num_samples), np.float64)
        idx = xp.searchsorted((cdf + shift).reshape(-1), (u + shift).reshape(-1), side="right")
        idx = xp.minimum(idx.reshape(rows, num_samples) - xp.arange(rows)[:, None] * n, n - 1)
    else:
        # exponential race (Efraimidis-Spirakis): the k smallest E / w are a sample without
        # replacement with the same law as drawing one at a time
        e = -xp.log1p(-src.uniform((rows, n), np.float64))
        with np.errstate(divide="ignore"):
            keys = xp.where(w > 0, e / xp.where(w > 0, w, 1), xp.inf)
        idx = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    idx = idx.astype(np.int64).reshape(tuple(input.shape[:-1]) + (num_samples,))
    return _finish(idx, False, out)


def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson samples with the rates in `input` (same shape and dtype)."""
    _require_float("poisson_cpu", input.dtype)
    if bool((input._data < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    _, xp, src, _ = _setup(None, input.dtype, input.device, generator)
    value = src.poisson(input._data.astype(np.float64)).astype(input._data.dtype)
    if input.requires_grad:
        return _Sampled.apply(input, value=value, name="PoissonBackward0")
    return _make(value)


# ---------------------------------------------------------------------------
# in-place samplers (nn.init's building blocks)


def _fill(input: Tensor, value, name: str, *others) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor, got {type(input).__name__}")
    return _SampledInplace.apply(input, *others, value=value, name=name)


def _draw(input: Tensor, generator):
    d = input.dtype
    _, xp, src, shape = _setup(tuple(input.shape), d, input.device, generator)
    return d, xp, src, shape


def uniform_(input: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None,
             **kwargs) -> Tensor:
    """Fill `input` in place with uniform samples from [a, b) (also ``from=``, ``to=``)."""
    a, b = kwargs.pop("from", a), kwargs.pop("to", b)
    if kwargs:
        raise TypeError(f"uniform_() got unexpected keyword arguments {sorted(kwargs)}")
    d, xp, src, shape = _draw(input, generator)
    _require_float("check_uniform_bounds", d)
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} "
                           f"> to={b}")
    u = _uniform(xp, src, shape, dtypes.float64 if d is dtypes.float64 else dtypes.float32)
    return _fill(input, (u * (b - a) + a).astype(d.np_dtype), "UniformBackward0")


def normal_(input: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill `input` in place with normal samples of the given mean and std."""
    d, xp, src, shape = _draw(input, generator)
    _require_float("normal_kernel_cpu", d)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    value = (_normal(xp, src, shape, d) * std + mean).astype(d.np_dtype, copy=False)
    return _fill(input, value, "NormalBackward0")


_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def random_(input: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """Fill `input` in place with random integers: ``random_()`` over the dtype's range
    (floats: the exactly representable integers), ``random_(to)`` over [0, to),
    ``random_(from, to)`` over [from, to) (to=None: up to the dtype's maximum)."""
    args = list(args)
    if "from" in kwargs:
        args = [kwargs.pop("from")] + args
    if "to" in kwargs:
        args = (args or [0]) + [kwargs.pop("to")]
    d, xp, src, shape = _draw(input, generator)
    if d.is_floating_point:
        top = 2 ** _FLOAT_DIGITS[d.name]
    elif d is dtypes.bool:
        top = 1
    else:
        top = int(np.iinfo(d.np_dtype).max)
    if not args:
        low, high, name = 0, top + 1, "RandomBackward2"
    elif len(args) == 1:
        low, high, name = 0, int(args[0]), "RandomBackward1"
    else:
        low = int(args[0])
        high = top + 1 if args[1] is None else int(args[1])
        name = "RandomBackward0"
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    value = src.integers(low, high - 1, shape).astype(d.np_dtype)
    return _fill(input, value, name)


def bernoulli_(input: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill `input` in place with 0/1 samples, 1 with probability `p` (a number or a tensor
    broadcastable to `input`)."""
    d, xp, src, shape = _draw(input, generator)
    probs = p._data if isinstance(p, Tensor) else p
    _check_probability(probs)
    u = src.uniform(shape, np.float64 if d is dtypes.float64 else np.float32)
    value = (u < probs).astype(d.np_dtype)
    if isinstance(p, Tensor):
        return _fill(input, value, "BernoulliBackward1", p)
    return _fill(input, value, "BernoulliBackward2")


def _float_draw(input: Tensor, generator, op: str):
    d, xp, src, shape = _draw(input, generator)
    _require_float(op, d)
    return d, xp, src.uniform(shape, _work_dtype(d))


def exponential_(input: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill `input` in place with exponential samples of rate `lambd`."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    d, xp, u = _float_draw(input, generator, "exponential_cpu")
    return _fill(input, (-xp.log1p(-u) / lambd).astype(d.np_dtype), "ExponentialBackward0")


def geometric_(input: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill `input` in place with geometric samples (trials until the first success, >= 1)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    d, xp, src, shape = _draw(input, generator)
    u = 1.0 - src.uniform(shape, np.float64)  # in (0, 1]
    value = xp.floor(xp.log(u) / np.log1p(-p)) + 1
    return _fill(input, value.astype(d.np_dtype), "GeometricBackward0")


def cauchy_(input: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill `input` in place with Cauchy samples."""
    d, xp, u = _float_draw(input, generator, "cauchy_cpu")
    value = median + sigma * xp.tan(np.pi * (u - 0.5))
    return _fill(input, value.astype(d.np_dtype), "CauchyBackward0")


def log_normal_(input: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill `input` in place with samples whose logarithm is normal(mean, std)."""
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    d, xp, src, shape = _draw(input, generator)
    _require_float("log_normal_cpu", d)
    value = xp.exp(_normal(xp, src, shape, dtypes.float64) * std + mean)
    return _fill(input, value.astype(d.np_dtype), "LogNormalBackward0")


