"""Every op of the op table on a CUDA device, checked against the same op on the CPU.

The CPU results are themselves checked against NumPy and finite differences by
`tests/ops/test_op_db.py`, so agreement with them is what the GPU path must show:
the forward value, its dtype and device, the gradients of a weighted sum of the
outputs, and (for ops with second derivatives) the gradient of those gradients.
Runs only where CuPy sees a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.ops.op_db import OP_DB
from tests.ops.test_op_db import _cast_input as _cast
from tests.ops.test_op_db import _outputs as _flat_outputs
from tests.ops.test_op_db import _rng, _select

pytestmark = pytest.mark.cuda

# Ops that draw random numbers: the CPU and GPU generators differ, so only the
# result's shape, dtype and device (and the gradients' shapes) can be compared.
RANDOM_OPS = {"rrelu_train", "dropout", "dropout2d", "alpha_dropout", "feature_alpha_dropout",
              "fractional_max_pool2d", "fractional_max_pool3d"}


def _tensors(sample, dtype: str, device: str, requires_grad: bool) -> list:
    """The sample's arguments as tensors on `device` (other arguments as they are)."""
    args = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            t = ember.tensor(_cast(a, dtype), device=device)
            wants = sample.grad_args is None or i in sample.grad_args
            if requires_grad and wants and t.is_floating_point():
                t.requires_grad_()
            args.append(t)
        elif isinstance(a, ember.Tensor):  # a sample's fixed tensor (indices, masks...)
            args.append(a.to(device))
        else:
            args.append(a)
    return args


def _call(op, args: list, kwargs: dict, device: str):
    """The op on `args`, with `device` as the default device, so that tensors the op's
    entry makes itself (fixed indices, masks) are made there too."""
    kwargs = {k: v.to(device) if isinstance(v, ember.Tensor) else v for k, v in kwargs.items()}
    ember.set_default_device(device)
    try:
        return _select(op, op.op(*args, **kwargs))
    finally:
        ember.set_default_device(None)


def _assert_same(cuda_out, cpu_out, op, what: str, values: bool = True):
    """cuda_out lives on the GPU and equals cpu_out (moved back) within op's tolerance."""
    cuda_list, cpu_list = _flat_outputs(cuda_out), _flat_outputs(cpu_out)
    assert len(cuda_list) == len(cpu_list), f"{op.name}: {what}: output count differs"
    for got, want in zip(cuda_list, cpu_list):
        assert got.device.type == "cuda", f"{op.name}: {what} is on {got.device}"
        assert got.dtype == want.dtype, f"{op.name}: {what}: {got.dtype} vs {want.dtype}"
        assert tuple(got.shape) == tuple(want.shape), (
            f"{op.name}: {what}: shape {tuple(got.shape)} vs {tuple(want.shape)}")
        if values:
            assert_close(got.cpu(), want, rtol=op.rtol, atol=op.atol, equal_nan=True,
                         msg=lambda m, n=op.name, w=what: f"{n}: {w}: {m}")


def _weights(outs: list, rng) -> list:
    return [rng.uniform(0.5, 1.5, size=tuple(o.shape)) for o in outs]


@pytest.mark.parametrize("op", OP_DB, ids=[op.name for op in OP_DB])
def test_forward_matches_cpu(op):
    values = op.name not in RANDOM_OPS
    for dtype in op.dtypes:
        for sample in op.samples(_rng(op.name)):
            cpu = _call(op, _tensors(sample, dtype, "cpu", False), sample.kwargs, "cpu")
            gpu = _call(op, _tensors(sample, dtype, "cuda", False), sample.kwargs, "cuda")
            _assert_same(gpu, cpu, op, f"forward in {dtype}", values)


def _grads(op, sample, device: str, order: int):
    """Gradients (and, for order 2, gradients of their weighted sum) of a weighted sum
    of the op's differentiable outputs, with respect to its tensor inputs."""
    args = _tensors(sample, "float64", device, True)
    inputs = [a for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
    if not inputs:
        return None
    outs = [o for o in _flat_outputs(_call(op, args, sample.kwargs, device))
            if o.requires_grad]
    if not outs:
        return None
    rng = _rng(op.name + "weights")
    loss = sum((o * ember.tensor(w, device=device)).sum()
               for o, w in zip(outs, _weights(outs, rng)))
    firsts = ember.autograd.grad(loss, inputs, create_graph=order > 1, allow_unused=True)
    if order < 2:
        return [g for g in firsts if g is not None]
    used = [g for g in firsts if g is not None and g.requires_grad]
    if not used:
        return [g.detach() for g in firsts if g is not None]
    again = sum((g * ember.tensor(w, device=device)).sum()
                for g, w in zip(used, _weights(used, rng)))
    seconds = ember.autograd.grad(again, inputs, allow_unused=True)
    return [g.detach() for g in firsts if g is not None] + [
        g for g in seconds if g is not None]


@pytest.mark.parametrize("op", [o for o in OP_DB if o.grad_order >= 1],
                         ids=[o.name for o in OP_DB if o.grad_order >= 1])
def test_gradients_match_cpu(op):
    values = op.name not in RANDOM_OPS and not op.nondeterministic_grad
    order = min(op.grad_order, 2)
    for sample in op.samples(_rng(op.name))[:3]:
        cpu = _grads(op, sample, "cpu", order)
        gpu = _grads(op, sample, "cuda", order)
        if cpu is None:
            assert gpu is None, f"{op.name}: a gradient on CUDA but none on the CPU"
            continue
        _assert_same(gpu, cpu, op, f"order-{order} gradients", values)
