"""The little language of the op parity sweep (tests/compat/test_ops_parity.py).

A `Case` names an op and lists samples; a sample is ``(args, kwargs)`` written with
library-neutral placeholders: `T` (a tensor made from the same NumPy array in both
libraries), `D` (a dtype, looked up in each library) and plain Python values.  The
sweep runs every sample for every dtype of the case, as a function (``lib.name(...)``)
and as a method (``args[0].name(...)``) where both libraries have them.
"""

from __future__ import annotations

FLOAT = ("float32", "float64")
FI = FLOAT + ("int64",)
ALL = FLOAT + ("int64", "bool")
INT = ("int64",)
INTB = ("int64", "bool")
NONE = (None,)  # samples whose tensors all name their dtype


class T:
    """A tensor argument.

    `shape` (positional ints), `dtype` (None: the case's dtype), values drawn uniformly
    from [low, high] (integers: the whole numbers in that range), or fixed `values`;
    `grad`: the tensor requires grad when its dtype is floating point.
    """

    __slots__ = ("shape", "dtype", "low", "high", "grad", "values", "transposed")

    def __init__(self, *shape, dtype=None, low=-2.0, high=2.0, grad=True, values=None,
                 transposed=False):
        self.shape, self.dtype, self.low, self.high = shape, dtype, low, high
        self.grad, self.values, self.transposed = grad, values, transposed

    def __repr__(self):
        extra = ([f"dtype={self.dtype}"] if self.dtype else []) + (["t"] if self.transposed else [])
        if self.values is not None:
            return f"V({', '.join([repr(self.values)[:40]] + extra)})"
        return f"T({', '.join([str(n) for n in self.shape] + extra)})"


class D:
    """A dtype, by name (``D("int64")`` is ``torch.int64`` / ``ember.int64``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


def s(*args, **kwargs):
    """One sample: positional and keyword arguments."""
    return (args, kwargs)


def sample_repr(sample) -> str:
    """``(T(2, 3), 0, keepdim=True)``: a sample as written, for test reports."""
    args, kwargs = sample
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def idx(*values, dtype="int64"):
    """A fixed integer tensor (indices)."""
    return T(values=list(values), dtype=dtype, grad=False)


def vals(values, dtype=None, grad=True):
    """A tensor with fixed values (nested lists)."""
    return T(values=values, dtype=dtype, grad=grad)


def mask(*shape):
    """A random bool tensor."""
    return T(*shape, dtype="bool", grad=False)


class Case:
    """One op and its samples.

    name      the op's name in both libraries (function and/or Tensor method)
    samples   a list of ``s(...)`` samples
    dtypes    the dtypes substituted for ``T(dtype=None)``
    grad      compare the gradients of a weighted sum of the float outputs
    variants  ("fn", "method"), or a subset; None: whichever both libraries have
    op        ``op(lib, *args, **kwargs)`` instead of looking the name up
    tol       a factor on the value tolerances (e.g. for LAPACK-based ops in float64)
    tag       distinguishes several cases of one op in test ids
    """

    __slots__ = ("name", "samples", "dtypes", "grad", "variants", "op", "tol", "tag")

    def __init__(self, name, samples, dtypes=FLOAT, *, grad=True, variants=None, op=None,
                 tol=1.0, tag=""):
        self.name, self.samples, self.dtypes, self.grad = name, samples, dtypes, grad
        self.variants, self.op, self.tol, self.tag = variants, op, tol, tag

    @property
    def id(self) -> str:
        return self.name + (f"-{self.tag}" if self.tag else "")

    def __repr__(self):
        return self.id


# ---------------------------------------------------------------------------
# sample sets shared by many cases


def unary(low=-2.0, high=2.0, empty=True):
    """0-dim, 1-D, 2-D (and empty) inputs with values in [low, high]."""
    shapes = [(), (5,), (2, 3)] + ([(0,)] if empty else [])
    return [s(T(*sh, low=low, high=high)) for sh in shapes]


def binary(low=-2.0, high=2.0, low2=None, high2=None, scalars=(2, 1.5), empty=True,
           promote=True):
    """Pairs that broadcast (same shape, trailing, 0-dim with 2-D, outer) and tensor-scalar;
    with `promote`, mixed-dtype pairs too."""
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2

    def b(*shape, **kw):
        return T(*shape, low=low2, high=high2, **kw)

    pairs = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 3)), ((2, 1), (1, 3)), ((), ())]
    if empty:
        pairs.append(((0, 3), (3,)))
    out = [s(T(*x, low=low, high=high), b(*y)) for x, y in pairs]
    out += [s(T(2, 3, low=low, high=high), v) for v in scalars]
    if promote:
        out += [s(T(2, 3, low=low, high=high), b(3, dtype="int64")),
                s(T(2, 3, low=low, high=high), b(dtype="float64")),
                s(T(3, low=low, high=high), b(2, 1, dtype="float32"))]
    return out
