"""Attach the op functions to Tensor as methods and operators, from one table.

The core (``ember/_core/tensor.py``) knows nothing of the ops; this file, which
sits above ``ember/ops``, is the one place where the Tensor method surface is
written down.  Each entry is ``method name -> function``; the function takes the
tensor as its first argument.
"""

from __future__ import annotations

from ._core import shared_memory
from ._core.tensor import Tensor
from .ops import arithmetic, conversion, creation, reduction, shape
from .ops import index_dim, indexing, joining, scatter, slicing
from .ops import linalg_norms, reduction_stats, sorting
from .ops import arithmetic_fused, comparison, elementwise, elementwise_special
from .ops import combining, elementwise_binary, gamma, shape_inplace, signal, statistics
from .ops import complex as complex_ops
from .ops import linalg, linalg_composite, linalg_decomp, linalg_lu, linalg_svd
from .ops import stft as stft_ops
from .ops import activation, sampling, sparse_coo
from .ops import bessel
from . import _interop
from .ops._util import SCALAR_TYPES
from ._legacy_types import legacy_new

_OPERAND_TYPES = (Tensor,) + SCALAR_TYPES


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    method.__doc__ = fn.__doc__
    return method


def _to_sparse_coo(self):
    """The non-zero entries as a COO tensor."""
    return sparse_coo.to_sparse(self)


def _to_dense(self, dtype=None, *, masked_grad=None):
    """Itself: the tensor is already dense (a dtype converts it)."""
    return self if dtype is None else conversion.to(self, dtype)


def _new(self, *args, device=None):
    """The legacy constructor: sizes, data or a tensor, with this tensor's dtype and device."""
    return legacy_new(self.dtype, self.device if device is None else device, args, "new")


def _dequantize(self):
    """Itself: a float tensor is not quantized (``QuantizedTensor.dequantize`` converts)."""
    return self


def _not_implemented_for_others(fn):
    """Operators return NotImplemented for operand types they do not know."""
    def method(self, other):
        if isinstance(other, _OPERAND_TYPES):
            return fn(self, other)
        return NotImplemented
    method.__doc__ = fn.__doc__
    return method


# The ops that also have an in-place method ``name_`` (the same op, its result written
# into self): `_ops` adds the row ``name_ -> module.name_`` for each of them.
INPLACE = frozenset("""
    sinc ldexp nextafter gcd lcm renorm copysign deg2rad rad2deg lgamma digamma mvlgamma add
    sub mul div neg cumsum cumprod tril triu exp exp2 expm1 log log2 log10 log1p sqrt rsqrt
    sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh arcsin arccos arctan arcsinh
    arccosh arctanh sign sgn floor ceil round trunc fix frac relu sigmoid logit erf erfc
    erfinv i0 atan2 arctan2 hypot xlogy clamp clip clamp_min clamp_max nan_to_num pow
    float_power square abs absolute reciprocal addcmul addcdiv lerp floor_divide remainder
    fmod eq ne lt le gt ge greater greater_equal less less_equal not_equal logical_and
    logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not
    bitwise_left_shift bitwise_right_shift index_put masked_fill masked_scatter put scatter
    scatter_add scatter_reduce index_add index_copy index_fill index_reduce addmm addmv addr
    baddbmm addbmm bernoulli
""".split())


def _ops(module, names: str) -> dict:
    """The rows of one op family: ``name -> module.name`` for each of `names`, and
    ``name_ -> module.name_`` for those in INPLACE."""
    rows = {}
    for name in names.split():
        rows[name] = getattr(module, name)
        if name in INPLACE:
            rows[name + "_"] = getattr(module, name + "_")
    return rows


def _table(*sections: dict) -> dict:
    """The sections merged into one table; a name given twice is an error."""
    table = {}
    for section in sections:
        for name, fn in section.items():
            if name in table:
                raise ValueError(f"the method table gives {name!r} twice")
            table[name] = fn
    return table


METHODS = _table(
    # conversion (ops/conversion.py) --------------------------------------------------------
    _ops(conversion, """
        to double half bfloat16 long short char byte cfloat cdouble cpu cuda clone
        contiguous copy_ type_as
    """),
    # sparse_coo (ops/sparse_coo.py) --------------------------------------------------------
    _ops(sparse_coo, "to_sparse"),
    # creation (ops/creation.py) ------------------------------------------------------------
    _ops(creation, "new_zeros new_ones new_empty new_full new_tensor fill_ zero_"),
    # arithmetic (ops/arithmetic.py) --------------------------------------------------------
    _ops(arithmetic, """
        add sub mul div true_divide positive neg pow float_power square abs absolute
        reciprocal floor_divide remainder fmod
    """),
    # shared_memory (_core/shared_memory.py) ------------------------------------------------
    _ops(shared_memory, "share_memory_ is_shared"),
    # complex_ops (ops/complex.py) ----------------------------------------------------------
    _ops(complex_ops, "conj conj_physical resolve_conj resolve_neg is_conj is_neg angle isreal"),
    # linalg_composite (ops/linalg_composite.py) --------------------------------------------
    _ops(linalg_composite, "matrix_exp cholesky_solve cholesky_inverse triangular_solve"),
    # stft_ops (ops/stft.py) ----------------------------------------------------------------
    _ops(stft_ops, "stft istft"),
    # elementwise_binary (ops/elementwise_binary.py) ----------------------------------------
    _ops(elementwise_binary, """
        sinc ldexp frexp nextafter gcd lcm logaddexp logaddexp2 copysign heaviside deg2rad
        rad2deg
    """),
    # combining (ops/combining.py) ----------------------------------------------------------
    _ops(combining, """
        hsplit vsplit dsplit diagflat dist renorm narrow_copy select_scatter slice_scatter
        diagonal_scatter diff
    """),
    # signal (ops/signal.py) ----------------------------------------------------------------
    _ops(signal, "histogram"),
    # shape_inplace (ops/shape_inplace.py) --------------------------------------------------
    _ops(shape_inplace, "unsqueeze_ squeeze_ t_ transpose_ swapdims_ swapaxes_ resize_ resize_as_"),
    # comparison (ops/comparison.py) --------------------------------------------------------
    _ops(comparison, """
        isin eq ne lt le gt ge greater greater_equal less less_equal not_equal logical_and
        logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not
        bitwise_left_shift bitwise_right_shift equal allclose isclose isnan isinf isfinite
        isposinf isneginf signbit
    """),
    # gamma (ops/gamma.py) ------------------------------------------------------------------
    _ops(gamma, "lgamma digamma polygamma_ mvlgamma"),
    # statistics (ops/statistics.py) --------------------------------------------------------
    _ops(statistics, "quantile nanquantile cov corrcoef"),
    # joining (ops/joining.py) --------------------------------------------------------------
    _ops(joining, """
        fill_diagonal_ repeat repeat_interleave tile flip fliplr flipud roll rot90 tril triu
    """),
    # reduction (ops/reduction.py) ----------------------------------------------------------
    _ops(reduction, """
        sum sum_to_size nansum mean nanmean prod max min amax amin aminmax argmax argmin all
        any count_nonzero
    """),
    # reduction_stats (ops/reduction_stats.py) ----------------------------------------------
    _ops(reduction_stats, "var std logsumexp"),
    # sorting (ops/sorting.py) --------------------------------------------------------------
    _ops(sorting, """
        cumsum cumprod cummax cummin logcumsumexp sort argsort msort topk kthvalue median
        nanmedian mode unique unique_consecutive bincount histc
    """),
    # shape (ops/shape.py) ------------------------------------------------------------------
    _ops(shape, """
        view view_as reshape reshape_as permute transpose expand expand_as flatten unflatten
        ravel squeeze unsqueeze swapaxes swapdims t adjoint movedim moveaxis broadcast_to
    """),
    # slicing (ops/slicing.py) --------------------------------------------------------------
    _ops(slicing, """
        narrow select split split_with_sizes tensor_split chunk unbind diagonal diag_embed
        diag unfold as_strided
    """),
    # elementwise (ops/elementwise.py) ------------------------------------------------------
    _ops(elementwise, """
        exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh
        tanh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh sign sgn floor
        ceil round trunc fix frac relu
    """),
    # elementwise_special (ops/elementwise_special.py) --------------------------------------
    _ops(elementwise_special, """
        sigmoid logit erf erfc erfinv atan2 arctan2 hypot xlogy clamp clip clamp_min
        clamp_max nan_to_num maximum minimum fmax fmin
    """),
    # bessel (ops/bessel.py) ----------------------------------------------------------------
    _ops(bessel, "i0"),
    # arithmetic_fused (ops/arithmetic_fused.py) --------------------------------------------
    _ops(arithmetic_fused, "addcmul addcdiv lerp"),
    # indexing (ops/indexing.py) ------------------------------------------------------------
    _ops(indexing, "index_put masked_fill masked_select masked_scatter take put nonzero argwhere"),
    # scatter (ops/scatter.py) --------------------------------------------------------------
    _ops(scatter, "gather scatter scatter_add scatter_reduce take_along_dim"),
    # index_dim (ops/index_dim.py) ----------------------------------------------------------
    _ops(index_dim, "index_select index_add index_copy index_fill index_reduce"),
    # linalg (ops/linalg.py) ----------------------------------------------------------------
    _ops(linalg, """
        matmul mm bmm mv dot vdot inner outer ger kron addmm addmv addr baddbmm addbmm trace
        cross
    """),
    # linalg_decomp (ops/linalg_decomp.py) --------------------------------------------------
    _ops(linalg_decomp, "det logdet matrix_power"),
    # linalg_svd (ops/linalg_svd.py) --------------------------------------------------------
    _ops(linalg_svd, "pinverse"),
    # sampling (ops/sampling.py) ------------------------------------------------------------
    _ops(sampling, """
        uniform_ normal_ random_ bernoulli exponential_ geometric_ cauchy_ log_normal_
        multinomial
    """),
    # activation (ops/activation.py) --------------------------------------------------------
    _ops(activation, "hardshrink prelu"),
    # aliases, other modules' in-place forms and irregular signatures ---------------
    {
        "to_sparse_coo": _to_sparse_coo,
        "to_dense": _to_dense,
        "dequantize": _dequantize,
        "new": _new,
        "float": conversion.float_,
        "int": conversion.int_,
        "bool": conversion.bool_,
        "subtract": arithmetic.sub,
        "multiply": arithmetic.mul,
        "divide": arithmetic.div,
        "subtract_": arithmetic.sub_,
        "multiply_": arithmetic.mul_,
        "divide_": arithmetic.div_,
        "true_divide_": arithmetic.div_,
        "heaviside_": lambda self, values: self.copy_(elementwise_binary.heaviside(self, values)),
        "polygamma": lambda self, n: gamma.polygamma(n, self),
        "negative": arithmetic.neg,
        "negative_": arithmetic.neg_,
        "norm": linalg_norms.legacy_norm,
        "where": elementwise_special.tensor_where,
        "slogdet": linalg_decomp.legacy_slogdet,
        "inverse": linalg_decomp.inv,
        "cholesky": linalg_decomp.legacy_cholesky,
        "lu": linalg_lu.legacy_lu,
        "lu_solve": linalg_lu.legacy_lu_solve,
        "orgqr": linalg_composite.orgqr,
        "qr": linalg_decomp.legacy_qr,
        "svd": linalg_svd.legacy_svd,
        "softmax": activation.softmax_fn,
        "log_softmax": activation.log_softmax_fn,
    },
    # interop (_interop.py: __array_ufunc__, __array_function__, __dlpack__) ---
    _interop.TENSOR_METHODS,
)

def _binary_operators(name: str, op, op_=None) -> dict:
    """``__name__``, the reflected ``__rname__`` and, when the op has an in-place form
    `op_`, ``__iname__``: each returns NotImplemented for an operand it does not know."""
    methods = {f"__{name}__": _not_implemented_for_others(op),
               f"__r{name}__": _not_implemented_for_others(_reflected(op))}
    if op_ is not None:
        methods[f"__i{name}__"] = _not_implemented_for_others(op_)
    return methods


OPERATORS = {
    # arithmetic operators (+ - * / ** // % unary - + abs) ---------------------
    **_binary_operators("add", arithmetic.add, arithmetic.add_),
    **_binary_operators("sub", arithmetic.sub, arithmetic.sub_),
    **_binary_operators("mul", arithmetic.mul, arithmetic.mul_),
    **_binary_operators("truediv", arithmetic.div, arithmetic.div_),
    **_binary_operators("pow", arithmetic.pow, arithmetic.pow_),
    **_binary_operators("floordiv", arithmetic.floor_divide, arithmetic.floor_divide_),
    **_binary_operators("mod", arithmetic.remainder, arithmetic.remainder_),
    "__neg__": arithmetic.neg,
    "__pos__": lambda self: self,
    "__abs__": arithmetic.abs,
    # comparison operators (== != < <= > >=): Python reflects them itself -------
    **{f"__{name}__": _not_implemented_for_others(getattr(comparison, name))
       for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    # bitwise operators (& | ^ << >> ~) -----------------------------------------
    **_binary_operators("and", comparison.bitwise_and, comparison.bitwise_and_),
    **_binary_operators("or", comparison.bitwise_or, comparison.bitwise_or_),
    **_binary_operators("xor", comparison.bitwise_xor, comparison.bitwise_xor_),
    **_binary_operators("lshift", comparison.bitwise_left_shift,
                        comparison.bitwise_left_shift_),
    **_binary_operators("rshift", comparison.bitwise_right_shift,
                        comparison.bitwise_right_shift_),
    "__invert__": comparison.invert,
    # indexing operators (__getitem__ __setitem__) -----------------------------
    "__getitem__": indexing.getitem,
    "__setitem__": indexing.setitem,
    # linalg operators (@; no in-place form) ------------------------------------
    **_binary_operators("matmul", linalg.matmul),
}

PROPERTIES = {
    # shape properties (T, mT, H, mH) -------------------------------------------
    "T": shape.T_property,
    "mT": shape.mT_property,
    "H": shape.H_property,
    "mH": shape.mH_property,
    # complex parts (new tensors, not views) -----------------------------------
    "real": complex_ops.real,
    "imag": complex_ops.imag,
}


def attach() -> None:
    """Install the table on Tensor (called once by ``ember/__init__.py``)."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)
    for name, fget in PROPERTIES.items():
        setattr(Tensor, name, property(fget))
    sparse_coo.refuse_dense_methods(list(METHODS) + list(OPERATORS), PROPERTIES)
