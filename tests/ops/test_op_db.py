"""Generic tests driven by the op table: forward vs NumPy, gradcheck, gradgradcheck,
type promotion, and no reference cycles left behind."""

from __future__ import annotations

import gc
import weakref
import zlib

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close
from tests.ops.op_db import OP_DB

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def _rng(name: str):
    return np.random.default_rng(zlib.crc32(name.encode()))


def _cast_input(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype in ("int64", "int32", "int16", "int8", "uint8"):
        return np.round(a * 3).astype(dtype)
    if dtype == "bool":
        return a > 0
    return a.astype(dtype)


def _to_ember(sample, dtype: str, requires_grad: bool = False):
    args = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            t = ember.tensor(_cast_input(a, dtype))
            wants = sample.grad_args is None or i in sample.grad_args
            if requires_grad and wants and t.is_floating_point():
                t.requires_grad_()
            args.append(t)
        else:
            args.append(a)
    return args


def _select(op, out):
    if op.output_index is not None and isinstance(out, tuple):
        return out[op.output_index]
    return out


def _outputs(out):
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in items if isinstance(o, ember.Tensor)]


IDS = [op.name for op in OP_DB]


@pytest.mark.parametrize("op", OP_DB, ids=IDS)
def test_forward_matches_numpy(op):
    if op.ref is None:
        pytest.skip(f"{op.name} has no NumPy reference (checked elsewhere)")
    for dtype in op.dtypes:
        for sample in op.samples(_rng(op.name)):
            args = _to_ember(sample, dtype)
            ref_args = [_cast_input(a, dtype).astype(np.float64) if isinstance(a, np.ndarray)
                        and dtype not in ("int64", "bool") else
                        (_cast_input(a, dtype) if isinstance(a, np.ndarray) else a)
                        for a in sample.args]
            actual = _select(op, op.op(*args, **sample.kwargs))
            expected = _select(op, op.ref(*ref_args, **sample.kwargs))
            if isinstance(actual, (tuple, list)):
                for a, e in zip(actual, expected):
                    assert_close(a, np.asarray(e), rtol=op.rtol, atol=op.atol,
                                 check_dtype=False)
            else:
                assert_close(actual, np.asarray(expected), rtol=op.rtol, atol=op.atol,
                             check_dtype=False)


@pytest.mark.parametrize("op", [o for o in OP_DB if o.grad_order >= 1],
                         ids=[o.name for o in OP_DB if o.grad_order >= 1])
def test_gradcheck(op):
    for sample in op.samples(_rng(op.name)):
        args = _to_ember(sample, "float64", requires_grad=True)
        if not any(isinstance(a, ember.Tensor) and a.requires_grad for a in args):
            continue
        fn = lambda *xs, kw=sample.kwargs: _select(op, op.op(*xs, **kw))
        assert gradcheck(fn, tuple(args), atol=op.gradcheck_atol)


@pytest.mark.parametrize("op", [o for o in OP_DB if o.grad_order >= 2],
                         ids=[o.name for o in OP_DB if o.grad_order >= 2])
def test_gradgradcheck(op):
    for sample in op.samples(_rng(op.name))[:2]:
        args = _to_ember(sample, "float64", requires_grad=True)
        if not any(isinstance(a, ember.Tensor) and a.requires_grad for a in args):
            continue
        fn = lambda *xs, kw=sample.kwargs: _select(op, op.op(*xs, **kw))
        assert gradgradcheck(fn, tuple(args), atol=op.gradcheck_atol)


@pytest.mark.parametrize("op", [o for o in OP_DB if o.grad_order >= 2],
                         ids=[o.name for o in OP_DB if o.grad_order >= 2])
def test_recorded_first_derivative_equals_the_plain_one(op):
    """The gradient taken with ``create_graph=True`` (the formulas gradgradcheck
    differentiates) equals the one without (the formulas gradcheck checks): gradgradcheck
    alone passes a recorded backward that is wrong in a self-consistent way."""
    for sample in op.samples(_rng(op.name))[:2]:
        args = _to_ember(sample, "float64", requires_grad=True)
        wrt = [a for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
        if not wrt:
            continue
        outs = [o for o in _outputs(_select(op, op.op(*args, **sample.kwargs)))
                if o.requires_grad]
        rng = _rng(op.name + "/seed")
        seeds = [ember.tensor(rng.uniform(-1, 1, tuple(o.shape))) for o in outs]
        runs = []
        for create_graph in (False, True):
            outs = [o for o in _outputs(_select(op, op.op(*args, **sample.kwargs)))
                    if o.requires_grad]
            runs.append(ember.autograd.grad(outs, wrt, seeds, create_graph=create_graph,
                                            allow_unused=True))
        for plain, recorded in zip(*runs):
            assert (plain is None) == (recorded is None)
            if plain is not None:
                np.testing.assert_allclose(recorded.detach().numpy(), plain.numpy(),
                                           rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("op", [o for o in OP_DB if o.grad_order >= 1],
                         ids=[o.name for o in OP_DB if o.grad_order >= 1])
def test_no_reference_cycles(op):
    """The graph and its saved tensors are freed by reference counting alone."""
    sample = op.samples(_rng(op.name))[0]
    # NOTE: no gc.collect() first: with the collector off, what dies in here dies by
    # reference counting whatever garbage earlier tests left, and a full collection
    # costs ~0.1 s once numba's kernels are loaded (47 s of the suite in this test).
    gc.disable()
    try:
        args = _to_ember(sample, "float64", requires_grad=True)
        outs = [o for o in _outputs(_select(op, op.op(*args, **sample.kwargs)))
                if o.requires_grad]
        if not outs:
            pytest.skip("no differentiable output for this sample")
        refs = [weakref.ref(o) for o in outs] + [weakref.ref(o.grad_fn) for o in outs]
        loss = sum((o.sum() for o in outs[1:]), outs[0].sum())
        loss.backward()
        del outs, loss
        assert all(r() is None for r in refs), "graph nodes or outputs outlived their owners"
    finally:
        gc.enable()


# Result dtypes by PyTorch's promotion rules, for the combinations below.
PROMOTION_CASES = [
    # (lhs, rhs, expected) where a dtype name is a 1-d tensor, "0d:<name>" a 0-dim tensor,
    # and a Python value a scalar.
    ("int64", "float32", "float32"),
    ("int32", "int64", "int64"),
    ("uint8", "int8", "int16"),
    ("int64", 2.5, "float32"),
    ("float16", 2.5, "float16"),
    ("float32", "0d:float64", "float32"),
    ("int32", "0d:int64", "int32"),
    ("int32", "0d:float64", "float64"),
    ("bool", 3, "int64"),
    ("bool", "bool", "bool"),
    ("float16", "bfloat16", "float32"),
    ("float32", "float64", "float64"),
]


def _operand(spec):
    if isinstance(spec, str):
        if spec.startswith("0d:"):
            return ember.tensor(1, dtype=getattr(ember, spec[3:]))
        return ember.ones(3, dtype=getattr(ember, spec))
    return spec


def _torch_operand(spec):
    if isinstance(spec, str):
        if spec.startswith("0d:"):
            return torch.tensor(1, dtype=getattr(torch, spec[3:]))
        return torch.ones(3, dtype=getattr(torch, spec))
    return spec


@pytest.mark.parametrize("op", [o for o in OP_DB if o.promotes],
                         ids=[o.name for o in OP_DB if o.promotes])
@pytest.mark.parametrize("lhs,rhs,expected", PROMOTION_CASES)
def test_result_dtype_follows_promotion(op, lhs, rhs, expected):
    if op.name in ("sub",) and "bool" in (lhs, rhs):
        pytest.skip("sub does not take bool tensors (checked in test_arithmetic)")
    if op.name in ("maximum", "minimum", "fmax", "fmin") and not isinstance(rhs, str):
        pytest.skip("takes two tensors: a number raises TypeError, as in PyTorch")
    out = op.op(_operand(lhs), _operand(rhs))
    want = expected
    if op.name == "div" and expected in ("int64", "int32", "int16", "bool"):
        want = "float32"  # true division of integers gives the default float dtype
    if torch is not None and op.torch_name:
        ref = getattr(torch, op.torch_name)(_torch_operand(lhs), _torch_operand(rhs))
        assert str(ref.dtype).replace("torch.", "") == want
    assert out.dtype.name == want
