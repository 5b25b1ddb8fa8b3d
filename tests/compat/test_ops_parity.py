"""Parity with PyTorch, op by op: a table-driven sweep over ember's tensor functions and
Tensor methods (the tables are in ops_parity_cases*.py, the little language in
ops_parity_spec.py).

For every case, dtype and sample, both libraries are called with the same inputs (as a
function and as a method where both exist), and the sweep compares: the exception type
when PyTorch raises (RuntimeError subclasses count as RuntimeError), output types,
dtypes, shapes and values, ``requires_grad`` and whether ``grad_fn`` is None, the
``grad_fn`` name, memory sharing of views, in-place ops returning their target,
warnings (PyTorch emits none where NumPy would), and the gradients of a random-weighted
sum of the float outputs with respect to every float input.  `ERROR_CASES` adds bad calls
that must raise the same exception type.

Where ember deliberately differs, the difference is listed in `KNOWN_DIFFERENCES` with
its reason.  Skipped when PyTorch is not installed.
"""

from __future__ import annotations

import fnmatch
import inspect
import math
import warnings
import zlib

import numpy as np
import pytest

import ember
from ember.ops._util import ignore_numpy_fp_warnings

from .ops_parity_cases import CASES
from .ops_parity_cases4 import ERROR_CASES, NOT_SWEPT
from .ops_parity_spec import D, T, sample_repr

torch = pytest.importorskip("torch")

# (pattern, reason): fnmatch patterns over "<case id> <fn|method> <dtype> <sample> <check>",
# e.g. "median fn float32 (T(), 0)[0] grad_fn_name" (the sample as written in the table;
# [i] is the position in a tuple output).
_ZERO_DIM = ("a 0-dim input runs the op on a 1-element view, so the output's node is the "
             "reshape's (ViewBackward0); values and gradients agree")
_COMPOSITE = ("ember writes the op as a composition of other ops: the output's node is the "
              "last of them; values and gradients agree")
_POLYGAMMA = ("PyTorch's float64 polygamma (the derivative here) is good to ~5e-10 relative; "
              "ember's agrees with SciPy to 1e-15")
_NO_NODE = ("PyTorch records a node whose backward raises (no derivative); ember records "
            "none, so backward through it raises 'does not require grad' instead")
KNOWN_DIFFERENCES = [
    # gradients where PyTorch has none, or a wrong one
    ("a*h_ * grad", "PyTorch has no derivative for in-place asinh_/acosh_/atanh_ (backward "
                    "raises NotImplementedError); ember's is the out-of-place one"),
    ("logical_*_ method float* grad*", "PyTorch does not record in-place logical ops "
     "on float tensors (the gradient passes through as if they were not there); ember records "
     "them with a zero gradient, as it does eq_/lt_/..."),
    ("var * (T(2, 3), dim=()) grad*", "PyTorch's forward reduces over all dims for dim=() but "
                                      "its backward over none (a PyTorch bug)"),
    ("std * (T(2, 3), dim=()) grad*", "as var: PyTorch's backward for dim=() is inconsistent"),
    ("scatter * T(2, 5)) grad", "PyTorch's backward fails when src is larger than index (a "
                                "PyTorch bug); ember's gradient is right"),
    ("scatter_add * T(2, 4)) grad", "as scatter: PyTorch's backward fails for a src larger "
                                    "than index"),
    ("unique * requires_grad", _NO_NODE), ("unique * grad_fn", _NO_NODE),
    ("unique_consecutive * requires_grad", _NO_NODE),
    ("unique_consecutive * grad_fn", _NO_NODE),
    ("bincount * requires_grad", _NO_NODE), ("bincount * grad_fn", _NO_NODE),
    ("heaviside * requires_grad", _NO_NODE), ("heaviside * grad_fn", _NO_NODE),
    ("block_diag * grad_fn_name", _COMPOSITE), ("quantile * grad_fn_name", _COMPOSITE),
    ("nanquantile * grad_fn_name", _COMPOSITE),
    ("combinations * grad_fn_name", _COMPOSITE), ("mvlgamma * grad_fn_name", _COMPOSITE),
    ("*_scatter * grad_fn_name", _COMPOSITE), ("dist * grad_fn_name", _COMPOSITE),
    ("renorm* grad_fn_name", _COMPOSITE), ("narrow_copy * grad_fn_name", _COMPOSITE),
    ("ldexp* grad_fn_name", _COMPOSITE), ("heaviside_ * grad_fn_name", _NO_NODE),
    ("sinc_ * grad_fn_name", _COMPOSITE),
    ("*lu_solve * grad_fn_name", _COMPOSITE), ("lu_unpack * grad_fn_name", _COMPOSITE),
    ("*householder_product * grad_fn_name", _COMPOSITE), ("orgqr * grad_fn_name", _COMPOSITE),
    *[(f"{op} * grad_fn_name", _COMPOSITE) for op in (
        "cholesky_inverse", "triangular_solve", "linalg.tensorinv", "vander", "chain_matmul")],
    ("triangular_solve * warning", "PyTorch's deprecation notice for triangular_solve"),
    ("chain_matmul * warning", "PyTorch's deprecation notice for chain_matmul"),
    ("histogram * requires_grad", _NO_NODE), ("histogram * grad_fn", _NO_NODE),
    ("*trapezoid * grad_fn_name", _COMPOSITE), ("trapz * grad_fn_name", _COMPOSITE),
    ("ldexp* T(3, dtype=int64)) grad[[]0]*", "PyTorch computes 2**other in integers for the "
     "gradient, so a negative exponent gives it a zero gradient; ember's is 2**other"),
    ("ndtr * grad_fn_name", _COMPOSITE), ("ndtri * grad_fn_name", _COMPOSITE),
    ("digamma* float64 * grad*", _POLYGAMMA),
    ("fill_diagonal_ * grad_fn_name", "ember writes the diagonal with masked_fill_ "
                                      "(MaskedFillBackward0); PyTorch through a strided view "
                                      "(CopySlices); values and gradients agree"),
    ("cdist * grad_fn_name", _COMPOSITE + " (PyTorch's own matrix-product form is one too)"),
    ("diff * n=0) grad_fn_name", "with n=0 ember returns a clone (CloneBackward0); PyTorch's "
                                 "node is CopyBackwards"),
    ("slogdet *[[]0] requires_grad", "PyTorch marks the sign output of slogdet as "
                                      "differentiable (with a zero gradient); ember does not"),
    ("slogdet *[[]0] grad_fn", "as above: slogdet's sign has no node in ember"),
    # warnings PyTorch gives that ember does not
    ("scatter * reduce='add') warning", "PyTorch's deprecation notice for scatter(reduce=) "
                                        "with a tensor src"),
    ("index_reduce * warning", "PyTorch's 'index_reduce is in beta' notice"),
    # lenient argument parsing
    ("reshape fn * (T(2, 3), 6) raises", "ember's function form also takes the method's "
                                         "varargs shape (reshape(x, 6)); PyTorch's needs a tuple"),
    # node names
    *[(f"{op} * (T()* grad_fn_name", _ZERO_DIM) for op in (
        "median", "nanmedian", "kthvalue", "cumsum", "cumprod", "cummax", "logcumsumexp",
        "sort", "topk", "gather", "index_select")],
    *[(f"{op} * grad_fn_name", _COMPOSITE) for op in (
        "ravel", "diag", "diagonal_copy", "take", "put", "put_", "kron", "einsum", "logdet",
        "matrix_power", "linalg.matrix_norm", "linalg.norm", "sum_to_size", "prelu", "rrelu",
        "rrelu_", "batch_norm", "instance_norm", "rnn_tanh_cell",
        "rnn_relu_cell", "gru_cell", "lstm_cell", "index_reduce", "index_reduce_")],
    ("cholesky * grad_fn_name", "torch.cholesky is linalg.cholesky underneath in ember "
                                "(LinalgCholeskyExBackward0)"),
    ("getitem * (T(4, 3), (-1, slice(1, None, None))) grad_fn_name",
     "ember applies the slice before the integer index; PyTorch the other way round"),
    ("setitem * grad_fn_name", "ember's __setitem__ always records CopySlices (a write "
                               "through a view); PyTorch a plain copy_/fill_ node when the "
                               "index covers the whole tensor"),
    # memory sharing
    ("einsum * ('ij->ji', T(2, 3)) view", "PyTorch's einsum returns a view for a pure "
                                          "transposition; ember's always computes a new tensor"),
    ("dropout * (T(2, 3), 0.0, True) *", "PyTorch returns the input itself for p=0 in "
                                         "training mode; ember multiplies by a mask of ones"),
]

# value tolerances (rtol, atol) by output dtype; gradients get GRAD_TOL
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13), "float16": (1e-3, 1e-3),
       "bfloat16": (1e-2, 1e-2), "complex64": (1e-5, 1e-6), "complex128": (1e-12, 1e-13)}
GRAD_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}


# ---------------------------------------------------------------------------
# building the inputs


class _Array:
    """A materialized `T`: the NumPy array both libraries' tensors are made from."""

    __slots__ = ("array", "grad", "transposed")

    def __init__(self, array, grad, transposed):
        self.array, self.grad, self.transposed = array, grad, transposed


def _materialize(spec, dtype, rng):
    if isinstance(spec, T):
        d = spec.dtype or dtype
        np_dtype = np.dtype(d)
        if spec.values is not None:
            array = np.asarray(spec.values, dtype=np_dtype)
        elif np_dtype.kind == "b":
            array = rng.random(spec.shape) < 0.5
        elif np_dtype.kind in "iu":
            lo, hi = math.ceil(spec.low), math.floor(spec.high)
            if np_dtype.kind == "u":
                lo = max(lo, 0)
            array = rng.integers(lo, max(lo, hi) + 1, spec.shape).astype(np_dtype)
        else:
            array = rng.uniform(spec.low, spec.high, spec.shape).astype(np_dtype)
        array = np.asarray(array)
        if spec.transposed:
            array = np.ascontiguousarray(array.T).T
        return _Array(array, spec.grad and np_dtype.kind in "fc", spec.transposed)
    if isinstance(spec, list):
        return [_materialize(v, dtype, rng) for v in spec]
    if isinstance(spec, tuple):
        return tuple(_materialize(v, dtype, rng) for v in spec)
    if isinstance(spec, dict):
        return {k: _materialize(v, dtype, rng) for k, v in spec.items()}
    return spec


def _to_lib(value, lib, leaves: list):
    if isinstance(value, _Array):
        array = value.array
        if value.transposed:
            t = lib.from_numpy(np.ascontiguousarray(array.T)).t()
        else:
            t = lib.from_numpy(array.copy())
        if value.grad:
            if value.transposed:
                t = t.detach()
            t.requires_grad_(True)
            leaves.append(t)
        return t
    if isinstance(value, D):
        return getattr(lib, value.name)
    if isinstance(value, list):
        return [_to_lib(v, lib, leaves) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_lib(v, lib, leaves) for v in value)
    if isinstance(value, dict):
        return {k: _to_lib(v, lib, leaves) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------
# running one sample in one library


class _Run:
    __slots__ = ("out", "exc", "leaves", "args", "warnings")


def _call(lib, case, variant, args, kwargs):
    if case.op is not None:
        return case.op(lib, *args, **kwargs)
    if variant == "fn":
        return getattr(lib, case.name)(*args, **kwargs)
    return getattr(args[0], case.name)(*args[1:], **kwargs)


def _run(lib, case, variant, margs, mkwargs) -> _Run:
    run = _Run()
    run.leaves = []
    args = list(_to_lib(margs, lib, run.leaves))
    kwargs = _to_lib(mkwargs, lib, run.leaves)
    if _is_inplace(case) and args and isinstance(args[0], lib.Tensor) and args[0].requires_grad:
        args[0] = args[0].clone()  # an in-place op can't write into a leaf that requires grad
    run.args = args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ignore_numpy_fp_warnings()  # ember's own filter, as installed by `import ember`
        try:
            run.out, run.exc = _call(lib, case, variant, args, kwargs), None
        except Exception as exc:  # noqa: BLE001 - compared with PyTorch's below
            run.out, run.exc = None, exc
    run.warnings = [w for w in caught if not issubclass(w.category, DeprecationWarning)]
    return run


def _is_inplace(case) -> bool:
    return case.op is None and case.name.endswith("_") and not case.name.startswith("_")


def _error_kind(exc: BaseException) -> str:
    for kind in (IndexError, TypeError, ValueError, RuntimeError):
        if isinstance(exc, kind):
            return kind.__name__
    return type(exc).__name__


def _variants(case) -> list:
    if case.op is not None:
        return ["fn"]
    found = []
    for variant in case.variants or ("fn", "method"):
        owner_t, owner_e = (torch, ember) if variant == "fn" else (torch.Tensor, ember.Tensor)
        if hasattr(owner_t, case.name):
            found.append(variant)
    return found


# ---------------------------------------------------------------------------
# comparing


def _dtype_name(d) -> str:
    return str(d).rsplit(".", 1)[-1]


def _node_name(node) -> str:
    # PyTorch's nodes written in C++ carry their namespace ("torch::autograd::CopySlices");
    # ember's node of the same role has the bare name.
    return node.name().removeprefix("torch::autograd::")


def _np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype is torch.bfloat16:
            t = t.float()
        return t.numpy(force=True)  # (force: conj/neg bits, torch's zero tensors)
    a = np.asarray(t.detach().numpy())
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def _close(e, t, rtol, atol) -> bool:
    if e.shape != t.shape:
        return False
    if e.dtype.kind in "biu" and t.dtype.kind in "biu":
        return bool(np.array_equal(e, t))
    return bool(np.allclose(e, t, rtol=rtol, atol=atol, equal_nan=True))


def _compare(e, t, where: str, found: list, tol: float) -> None:
    """Append a "<where> <check>: detail" line to `found` for each difference."""
    if isinstance(t, torch.Tensor):
        if not isinstance(e, ember.Tensor):
            found.append(f"{where} type: ember gave {type(e).__name__}")
            return
        if _dtype_name(e.dtype) != _dtype_name(t.dtype):
            found.append(f"{where} dtype: {_dtype_name(e.dtype)} vs {_dtype_name(t.dtype)}")
        if tuple(e.shape) != tuple(t.shape):
            found.append(f"{where} shape: {tuple(e.shape)} vs {tuple(t.shape)}")
            return
        if e.requires_grad != t.requires_grad:
            found.append(f"{where} requires_grad: {e.requires_grad} vs {t.requires_grad}")
        if (e.grad_fn is None) != (t.grad_fn is None):
            found.append(f"{where} grad_fn: {e.grad_fn} vs {t.grad_fn}")
        elif t.grad_fn is not None and e.grad_fn.name() != _node_name(t.grad_fn):
            found.append(f"{where} grad_fn_name: {e.grad_fn.name()} vs {t.grad_fn.name()}")
        en, tn = _np(e), _np(t)
        rtol, atol = TOL.get(tn.dtype.name, (0, 0))
        if not _close(en.astype(tn.dtype, copy=False) if en.dtype != tn.dtype else en, tn,
                      rtol * tol, atol * tol):
            found.append(f"{where} values:\n  ember {en!r}\n  torch {tn!r}")
        return
    if isinstance(t, (tuple, list)):
        if not isinstance(e, (tuple, list)) or len(e) != len(t):
            found.append(f"{where} type: ember gave {type(e).__name__} "
                         f"(len {len(e) if hasattr(e, '__len__') else '-'}) vs "
                         f"{type(t).__name__} (len {len(t)})")
            return
        if type(t).__module__ == "torch.return_types" and type(e).__name__ != type(t).__name__:
            found.append(f"{where} type: {type(e).__name__} vs return_types.{type(t).__name__}")
        if isinstance(t, list) != isinstance(e, list):
            found.append(f"{where} type: {type(e).__name__} vs {type(t).__name__}")
        for i, (a, b) in enumerate(zip(e, t)):
            _compare(a, b, f"{where}[{i}]", found, tol)
        return
    if isinstance(t, torch.dtype):
        if not isinstance(e, ember.dtype) or _dtype_name(e) != _dtype_name(t):
            found.append(f"{where} value: {e!r} vs {t!r}")
        return
    if t is None or isinstance(t, (bool, int, float, complex, str)):
        if isinstance(e, np.generic) or type(e) is not type(t):
            found.append(f"{where} type: ember gave {type(e).__name__} ({e!r}) vs "
                         f"{type(t).__name__} ({t!r})")
        elif isinstance(t, float) and not (math.isclose(e, t, rel_tol=1e-6 * tol, abs_tol=1e-7)
                                           or (math.isnan(e) and math.isnan(t))):
            found.append(f"{where} value: {e!r} vs {t!r}")
        elif not isinstance(t, float) and e != t:
            found.append(f"{where} value: {e!r} vs {t!r}")
        return
    if isinstance(t, np.ndarray):
        if not isinstance(e, np.ndarray) or e.dtype != t.dtype or not _close(e, t, 0, 0):
            found.append(f"{where} value: {e!r} vs {t!r}")
        return
    found.append(f"{where} type: output of type {type(t).__name__} not compared")


def _flat(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _check_views(e_run, t_run, where, found) -> None:
    """An output that shares memory with an input in PyTorch shares it in ember too."""
    t_ins = [a for a in _flat(t_run.args) if isinstance(a, torch.Tensor) and a.numel()]
    e_ins = [a for a in _flat(e_run.args) if isinstance(a, ember.Tensor) and a.numel()]
    if len(t_ins) != len(e_ins):
        return
    for i, (eo, to) in enumerate(zip(_flat(e_run.out), _flat(t_run.out))):
        if not (isinstance(to, torch.Tensor) and isinstance(eo, ember.Tensor)) or not to.numel():
            continue
        for ti, ei in zip(t_ins, e_ins):
            shared_t = to.untyped_storage().data_ptr() == ti.untyped_storage().data_ptr()
            shared_e = bool(np.may_share_memory(eo._data, ei._data))
            if shared_t != shared_e:
                found.append(f"{where} view: output {i} shares memory with an input: "
                             f"ember {shared_e}, torch {shared_t}")
                return


def _weighted_loss(lib, outs, rng):
    loss = None
    for o in outs:
        w = lib.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype)
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    return loss


def _np_dtype(d):
    return np.dtype(_dtype_name(d))


def _compare_grads(e_run, t_run, where, found, seed) -> None:
    if not t_run.leaves or len(t_run.leaves) != len(e_run.leaves):
        return
    pairs = [(eo, to) for eo, to in zip(_flat(e_run.out), _flat(t_run.out))
             if isinstance(to, torch.Tensor) and to.requires_grad and to.is_floating_point()]
    if not pairs or not all(isinstance(eo, ember.Tensor) and eo.requires_grad
                            for eo, _ in pairs):
        return
    t_loss = _weighted_loss(torch, [to for _, to in pairs], np.random.default_rng(seed))
    e_loss = _weighted_loss(ember, [eo for eo, _ in pairs], np.random.default_rng(seed))
    t_exc = e_exc = None
    try:
        t_grads = torch.autograd.grad(t_loss, t_run.leaves, allow_unused=True)
    except Exception as exc:  # noqa: BLE001
        t_exc = exc
    try:
        e_grads = ember.autograd.grad(e_loss, e_run.leaves, allow_unused=True)
    except Exception as exc:  # noqa: BLE001
        e_exc = exc
    if t_exc is not None or e_exc is not None:
        if t_exc is None or e_exc is None or _error_kind(t_exc) != _error_kind(e_exc):
            found.append(f"{where} grad: backward raised: ember {e_exc!r}, torch {t_exc!r}")
        return
    # float32 anywhere in the computation sets the tolerance (a float64 input of a float32
    # result gets a float32-accurate gradient)
    low = any(t.dtype is not torch.float64 for t in [to for _, to in pairs] + t_run.leaves)
    for i, (ge, gt, leaf) in enumerate(zip(e_grads, t_grads, t_run.leaves)):
        if ge is None and gt is None:
            continue
        gt_np = np.zeros(tuple(leaf.shape), _np_dtype(leaf.dtype)) if gt is None else _np(gt)
        ge_np = np.zeros_like(gt_np) if ge is None else _np(ge)
        rtol, atol = GRAD_TOL["float32" if low else gt_np.dtype.name]
        if ge_np.dtype != gt_np.dtype:
            found.append(f"{where} grad[{i}] dtype: {ge_np.dtype} vs {gt_np.dtype}")
        elif not _close(ge_np, gt_np, rtol, atol):
            found.append(f"{where} grad[{i}]:\n  ember {ge_np!r}\n  torch {gt_np!r}")


def _warnings_differ(e_run, t_run) -> bool:
    """ember leaks a NumPy RuntimeWarning, or lacks a kind of warning PyTorch gives.

    (PyTorch gives some warnings once per process only, so an ember warning that PyTorch
    did not repeat is not a difference.)"""
    e_kinds = {w.category for w in e_run.warnings}
    t_kinds = {w.category for w in t_run.warnings}
    return RuntimeWarning in e_kinds - t_kinds or bool(t_kinds - e_kinds)


def compare_sample(case, variant, dtype, index, sample) -> list:
    """Run one sample in both libraries; the list of differences found."""
    seed = zlib.crc32(f"{case.id} {variant} {dtype} #{index}".encode())
    where = f"{case.id} {variant} {dtype} {sample_repr(sample)}"
    margs, mkwargs = _materialize(sample, dtype, np.random.default_rng(seed))
    t_run = _run(torch, case, variant, margs, mkwargs)
    e_run = _run(ember, case, variant, margs, mkwargs)
    found = []
    if t_run.exc is not None or e_run.exc is not None:
        if t_run.exc is None:
            found.append(f"{where} raises: ember raised {e_run.exc!r}")
        elif e_run.exc is None:
            found.append(f"{where} raises: torch raised {_error_kind(t_run.exc)}, ember did "
                         f"not ({str(t_run.exc).splitlines()[0][:120]!r})")
        elif _error_kind(t_run.exc) != _error_kind(e_run.exc):
            found.append(f"{where} error: ember {e_run.exc!r}, torch {_error_kind(t_run.exc)} "
                         f"({str(t_run.exc).splitlines()[0][:120]!r})")
        return found
    _compare(e_run.out, t_run.out, where, found, case.tol)
    if _warnings_differ(e_run, t_run):
        found.append(f"{where} warning: ember {[str(w.message)[:80] for w in e_run.warnings]}"
                     f", torch {[str(w.message)[:80] for w in t_run.warnings]}")
    if _is_inplace(case) and (t_run.out is t_run.args[0]) != (e_run.out is e_run.args[0]):
        found.append(f"{where} inplace: returns its target: ember "
                     f"{e_run.out is e_run.args[0]}, torch {t_run.out is t_run.args[0]}")
    _check_views(e_run, t_run, where, found)
    if case.grad and all(_known(line) is not None for line in found):
        with warnings.catch_warnings():  # (inf * weight sums in the loss)
            warnings.simplefilter("ignore")
            _compare_grads(e_run, t_run, where, found, seed + 1)
    return found


def _known(line: str) -> str | None:
    key = line.split(": ", 1)[0]
    for pattern, reason in KNOWN_DIFFERENCES:
        if fnmatch.fnmatchcase(key, pattern):
            _USED_PATTERNS.add(pattern)
            return reason
    return None


_USED_PATTERNS: set = set()
_RAN: set = set()


# ---------------------------------------------------------------------------
# the tests


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op_parity(case):
    variants = _variants(case)
    assert variants, f"{case.id}: PyTorch has neither torch.{case.name} nor Tensor.{case.name}"
    found = []
    for variant in variants:
        owner = ember if variant == "fn" else ember.Tensor
        if case.op is None and not hasattr(owner, case.name):
            found.append(f"{case.id} {variant} * * missing: ember has no "
                         f"{'ember' if variant == 'fn' else 'Tensor'}.{case.name}")
            continue
        for dtype in case.dtypes:
            for index, sample in enumerate(case.samples):
                found += compare_sample(case, variant, dtype, index, sample)
    _RAN.add(case.id)
    unexpected = [line for line in found if _known(line) is None]
    assert not unexpected, f"{len(unexpected)} difference(s) from PyTorch:\n" + "\n".join(
        unexpected)


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c[0])
def test_error_parity(case):
    name, call = case
    kinds = []
    for lib in (torch, ember):
        try:
            with warnings.catch_warnings():  # (deprecation notices of the legacy functions)
                warnings.simplefilter("ignore")
                call(lib)
        except Exception as exc:  # noqa: BLE001
            kinds.append((_error_kind(exc), exc))
        else:
            kinds.append((None, None))
    (t_kind, t_exc), (e_kind, e_exc) = kinds
    assert t_kind is not None, f"{name}: PyTorch does not raise (the case is wrong)"
    key = f"{name} error"
    if e_kind != t_kind and _known(key) is None:
        pytest.fail(f"{name}: ember {'did not raise' if e_kind is None else repr(e_exc)}; "
                    f"torch raised {t_kind}: {str(t_exc).splitlines()[0][:160]}")


def _public_ops() -> tuple:
    fns = {n for n in dir(ember) if not n.startswith("_") and hasattr(torch, n)
           and callable(getattr(ember, n)) and not inspect.isclass(getattr(ember, n))}
    methods = {n for n in dir(ember.Tensor) if not n.startswith("_")
               and hasattr(torch.Tensor, n) and callable(getattr(ember.Tensor, n))}
    return fns, methods


def test_sweep_covers_public_ops():
    """Every function/method that ember and PyTorch both have is swept or excused.

    (Functions that are also in torch.nn.functional belong to the nn parity tests,
    tests/compat/test_nn_parity_*.py, unless a case here sweeps them too.)"""
    covered = {c.name for c in CASES} | set(NOT_SWEPT) | set(dir(torch.nn.functional))
    fns, methods = _public_ops()
    missing = sorted((fns | methods) - covered)
    assert not missing, f"not in the parity sweep (add a case or a NOT_SWEPT reason): {missing}"


def test_known_differences_are_current():
    """Each KNOWN_DIFFERENCES entry still matches a difference (when every case ran)."""
    if len(_RAN) < len({c.id for c in CASES}):
        pytest.skip("needs the whole sweep in this session")
    # (PyTorch gives some warnings once per process, so warning entries may go unused)
    stale = [p for p, _ in KNOWN_DIFFERENCES
             if p not in _USED_PATTERNS and not p.endswith("warning")]
    assert not stale, f"known differences that no longer occur: {stale}"
