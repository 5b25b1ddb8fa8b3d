"""Normalization: batch_norm, layer_norm, group_norm, instance_norm (one fused `Normalize`
Function), rms_norm, local_response_norm and normalize (compositions).

`Normalize` standardizes over some dims and applies an optional per-feature affine map,
in one pass forward and the closed-form gradient backward.  It also returns the mean
and inverse standard deviation (and the normalized input when there is an affine map)
as extra outputs; its backward takes gradients for them too.  That is what makes double
backward work: the backward reads those outputs, so differentiating the backward
sends gradients back into them, and through this node's backward to the input.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor, _make, size_str
from . import _kernels
from . import _native_batchnorm, _native_binary, _native_group_norm, _native_rows
from ._direct import records
from ._util import check_same_device, wrap_dim, xp_of
from .arithmetic import unsupported
from . import normalization_l2, normalization_rms
from .joining import cat
from .normalization_l2 import L2Normalize
from .normalization_rms import RmsNorm
from .recompute import recomputed_grads


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


class Normalize(Function):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` with the statistics over `dims`.

    `bshape` is the shape weight and bias are viewed as to broadcast against x.  When
    `running` = (running_mean, running_var) arrays is given, they are updated in place
    with `momentum` (unbiased variance), averaging the statistics over leading dims.
    Outputs: (out, mean, rstd) and, with an affine map, the normalized x.
    """

    _materialize_grads = False
    _fresh_grads = True  # (a broadcast mean gradient is read-only: the engine checks)

    @staticmethod
    def forward(ctx, x, weight, bias, *, dims, eps, bshape, running=None, momentum=0.1,
                name="NativeLayerNormBackward0"):
        ctx._name = name
        ctx.bias_shape = None if bias is None else bias.shape
        ctx.rows = running is None and _rows_fast(x, weight, bias, dims, bshape)
        if ctx.rows:
            return _layer_norm_rows(ctx, x, weight, bias, dims, eps, bshape)
        if _native_batchnorm.supports(x, dims, weight, bias):
            return _batch_norm_native(ctx, x, weight, bias, dims, eps, bshape, running, momentum)
        xp = xp_of(x)
        work = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
        mean = _mean(work, dims)
        centered = work - mean
        var = _mean(centered * centered, dims)
        rstd = 1.0 / xp.sqrt(var + eps)
        centered *= rstd  # in place: `centered` becomes the normalized y
        y = centered.astype(x.dtype, copy=False)
        n = _prod(x.shape[d] for d in dims)
        ctx.dims, ctx.n, ctx.bshape = dims, n, bshape
        ctx.affine = weight is not None or bias is not None
        full = (1,) * (x.ndim - len(bshape)) + tuple(bshape)
        ctx.per_group_affine = all(full[d] == 1 for d in dims)
        if running is not None:
            _update_running(xp, running, mean, var, n, momentum)
        mean, rstd = mean.astype(x.dtype, copy=False), rstd.astype(x.dtype, copy=False)
        if not ctx.affine:
            ctx.save_for_backward(y, rstd, None)
            return y, mean, rstd
        out = y * weight.reshape(bshape) if weight is not None else y.copy()
        if bias is not None:
            out += bias.reshape(bshape)
        ctx.save_for_backward(y, rstd, weight)
        return out.astype(x.dtype, copy=False), mean, rstd, y

    @staticmethod
    def backward(ctx, grad_out, grad_mean, grad_rstd, grad_y=None):
        y, rstd, weight = ctx.saved_tensors
        n, needs = ctx.n, ctx.needs_input_grad
        if grad_out is not None and grad_y is None and ctx.per_group_affine:
            gx, gw, gb = _backward_per_group(ctx, grad_out, y, rstd, weight)
        elif grad_out is not None and grad_y is None and not is_grad_enabled():
            gx, gw, gb = _backward_general_arrays(ctx, grad_out._data, y._data, rstd._data,
                                                  None if weight is None else weight._data)
        else:
            gx, gw, gb = _backward_general(ctx, grad_out, grad_y, y, rstd, weight)
        # mean = sum(x) / n, so d mean / dx = 1 / n
        if needs[0] and grad_mean is not None:
            extra = (grad_mean / n).expand(y.shape)
            gx = extra if gx is None else gx + extra
        # rstd = (var + eps) ** -1/2, so d rstd / dx = -rstd^2 * y / n
        if needs[0] and grad_rstd is not None:
            extra = -(grad_rstd * rstd * rstd / n) * y
            gx = extra if gx is None else gx + extra
        return gx, gw, gb


def _rows_fast(x, weight, bias, dims, bshape) -> bool:
    """True for layer norm's case that the row kernels of _kernels.py take: a C-contiguous
    float32/float64 NumPy x normalized over its trailing dims, with weight and bias (if
    any) of exactly those dims and x's dtype."""
    if not (type(x) is np.ndarray and x.dtype in (np.float32, np.float64) and x.size
            and x.flags.c_contiguous):
        return False
    trailing = tuple(range(x.ndim - len(dims), x.ndim))
    if tuple(dims) != trailing:
        return False
    if weight is None and bias is None:  # (group norm's: its affine map comes after)
        return True
    if tuple(bshape) != tuple(x.shape[d] for d in dims):
        return False
    return all(p is None or (type(p) is np.ndarray and p.dtype == x.dtype)
               for p in (weight, bias))


def _row_layer_norm(x, weight, bias, dims, eps) -> tuple:
    """(y, out, mean, rstd, n) of `_rows_fast` arrays: x as rows of n, one blocked kernel
    (y normalized, out its affine map; each of the row count's length)."""
    n = _prod(x.shape[d] for d in dims)
    rows = x.reshape(-1, n)
    w = None if weight is None else weight.reshape(-1)
    b = None if bias is None else bias.reshape(-1)
    kernels = _native_rows if _native_rows.supports(rows) else _kernels
    return (*kernels.layer_norm(rows, eps, w, b), n)


def _layer_norm_rows(ctx, x, weight, bias, dims, eps, bshape):
    """Normalize.forward for `_rows_fast` inputs: x as rows, one blocked kernel."""
    y, out, mean, rstd, n = _row_layer_norm(x, weight, bias, dims, eps)
    stat_shape = x.shape[:x.ndim - len(dims)] + (1,) * len(dims)
    y, mean, rstd = y.reshape(x.shape), mean.reshape(stat_shape), rstd.reshape(stat_shape)
    ctx.dims, ctx.n, ctx.bshape = dims, n, bshape
    ctx.affine = weight is not None or bias is not None
    ctx.per_group_affine = all(x.shape[d] == 1 for d in dims)
    if not ctx.affine:
        ctx.save_for_backward(y, rstd, None)
        return y, mean, rstd
    ctx.save_for_backward(y, rstd, weight)
    return out.reshape(x.shape), mean, rstd, y


def _backward_rows(ctx, g, y, rstd, weight):
    """`_backward_general_arrays` for inputs that took `_layer_norm_rows` (one blocked
    kernel); None when the incoming gradient is not laid out for it."""
    if not (type(g) is np.ndarray and g.dtype == y.dtype and g.shape == y.shape
            and g.flags.c_contiguous):
        return None
    needs = ctx.needs_input_grad
    n = ctx.n
    w = None if weight is None else weight.reshape(-1)
    rows_g, rows_y = g.reshape(-1, n), y.reshape(-1, n)
    kernels = _native_rows if _native_rows.supports(rows_g, rows_y) else _kernels
    gx, gw, gb = kernels.layer_norm_backward(
        rows_g, rows_y, rstd.reshape(-1, 1), w, needs[0], ctx.affine and needs[1],
        ctx.affine and needs[2])
    return (None if gx is None else _make(gx.reshape(y.shape)),
            None if gw is None else _make(gw.reshape(weight.shape)),
            None if gb is None else _make(gb.reshape(ctx.bias_shape)))


def _backward_general(ctx, grad_out, grad_y, y, rstd, weight):
    """The closed-form gradient for any layout of the affine parameters."""
    dims, needs = ctx.dims, ctx.needs_input_grad
    gw = gb = gx = None
    if ctx.affine and grad_out is not None:
        if needs[1]:
            gw = _reduce_to(grad_out * y, ctx.bshape).reshape(weight.shape)
        if needs[2]:
            gb = _reduce_to(grad_out, ctx.bshape).reshape(ctx.bias_shape)
    # the gradient reaching the normalized input y
    gy = grad_out
    if gy is not None and weight is not None:
        gy = gy * weight.reshape(ctx.bshape)
    if grad_y is not None:
        gy = grad_y if gy is None else gy + grad_y
    if needs[0] and gy is not None:
        gx = rstd * (gy - gy.mean(dims, keepdim=True) - y * (gy * y).mean(dims, keepdim=True))
    return gx, gw, gb


def _backward_general_arrays(ctx, g, y, rstd, weight):
    """`_backward_general` for first-order gradients (no graph recorded): the same formula
    on arrays, with in-place updates and row sums as matrix products (layer norm's case)."""
    if ctx.rows:
        grads = _backward_rows(ctx, g, y, rstd, weight)
        if grads is not None:
            return grads
    dims, needs = ctx.dims, ctx.needs_input_grad
    gw = gb = gx = None
    if ctx.affine:
        if needs[1]:
            gw = _make(_reduce_array(g * y, ctx.bshape).reshape(weight.shape))
        if needs[2]:
            gb = _make(_reduce_array(g, ctx.bshape).reshape(ctx.bias_shape))
    if needs[0]:
        gy = g * weight.reshape(ctx.bshape) if weight is not None else g
        t = gy * y
        m2 = _mean(t, dims)
        xp_of(y).multiply(y, m2, out=t)
        gx = gy - _mean(gy, dims)
        gx -= t
        gx *= rstd
        gx = _make(gx)
    return gx, gw, gb


def _mean(a, dims: tuple):
    """``a.mean(dims, keepdims=True)``; over the last dim as a matrix product (fast)."""
    if len(dims) == 1:
        return _kernels.sum_last(a, dims[0]) / a.shape[dims[0]]
    return a.mean(axis=dims, keepdims=True)


def _reduce_array(a, bshape):
    """`_reduce_to` on an array."""
    full = (1,) * (a.ndim - len(bshape)) + tuple(bshape)
    dims = tuple(i for i, s in enumerate(full) if s == 1 and a.shape[i] != 1)
    return a.sum(axis=dims, keepdims=True) if dims else a


def _backward_per_group(ctx, grad_out, y, rstd, weight):
    """The same gradient when weight and bias are constant within each normalized group
    (batch and instance norm): the sums that give the parameter gradients are the means
    the input gradient needs, and the weight folds into a per-group factor."""
    dims, n, needs = ctx.dims, ctx.n, ctx.needs_input_grad
    w = None if weight is None else weight._data
    if not is_grad_enabled() and _native_batchnorm.supports(grad_out._data, dims, w):
        gx, gw, gb = _native_batchnorm.backward(grad_out._data, y._data, rstd._data, w,
                                                needs[0])
        return (None if gx is None else _make(gx),
                _make(gw.reshape(weight.shape)) if needs[1] else None,
                _make(gb.reshape(ctx.bias_shape)) if needs[2] else None)
    mean_g = grad_out.mean(dims, keepdim=True)
    mean_gy = (grad_out * y).mean(dims, keepdim=True)
    gw = gb = gx = None
    if needs[1]:
        gw = _reduce_to(mean_gy * n, ctx.bshape).reshape(weight.shape)
    if needs[2]:
        gb = _reduce_to(mean_g * n, ctx.bshape).reshape(ctx.bias_shape)
    if needs[0]:
        scale = rstd if weight is None else rstd * weight.reshape(ctx.bshape)
        gx = (grad_out - mean_g - y * mean_gy) * scale
    return gx, gw, gb


def _reduce_to(t: Tensor, bshape) -> Tensor:
    """Sum `t` over the dims where the affine parameters broadcast (size 1 in `bshape`)."""
    full = (1,) * (t.dim() - len(bshape)) + tuple(bshape)
    dims = tuple(i for i, s in enumerate(full) if s == 1 and t.shape[i] != 1)
    return t.sum(dims, keepdim=True) if dims else t


def _update_running(xp, running, mean, var, n: int, momentum: float) -> None:
    """running = (1 - momentum) * running + momentum * batch statistic, in place."""
    running_mean, running_var = running
    c = running_mean.size
    batch_mean = mean.reshape(-1, c).mean(axis=0)
    # NOTE: the running variance is the unbiased one (n - 1), the batch is normalized
    # with the biased one (n), as in PyTorch.
    unbiased = var.reshape(-1, c).mean(axis=0) * (n / (n - 1) if n > 1 else math.inf)
    running_mean *= 1 - momentum
    running_mean += (momentum * batch_mean).astype(running_mean.dtype)
    running_var *= 1 - momentum
    running_var += (momentum * unbiased).astype(running_var.dtype)


def _normalize(x: Tensor, weight, bias, dims, eps, bshape, name, running=None,
               momentum=0.1) -> Tensor:
    return Normalize.apply(x, weight, bias, dims=dims, eps=eps, bshape=bshape, running=running,
                           momentum=momentum, name=name)[0]


def _bump(*tensors) -> None:
    for t in tensors:
        if t is not None:
            t._version.value += 1


def _check_float(op: str, input: Tensor) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise unsupported(f"{op}", input.dtype)


def _channels(op: str, input: Tensor, running_mean, running_var, weight, bias) -> int:
    """Check the input of a batch or instance norm and its per-channel tensors; the number
    of channels (dim 1)."""
    _check_float(op, input)
    if input.dim() < 2:
        wrap_dim(1, input.dim(), op)
    channels = input.shape[1]
    check_same_device(op, input, running_mean, running_var, weight, bias)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    return channels


# ---------------------------------------------------------------------------
# batch norm, instance norm


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape((-1,) + (1,) * (ndim - 2))


def _batch_norm_native(ctx, x, weight, bias, dims, eps, bshape, running, momentum):
    """`Normalize.forward` of training-mode batch norm through the numba kernels."""
    out, mean, var, rstd, y = _native_batchnorm.forward(x, weight, bias, eps)
    ctx.dims, ctx.n, ctx.bshape = dims, x.size // x.shape[1], bshape
    ctx.affine = weight is not None or bias is not None
    ctx.per_group_affine = True
    if running is not None:
        _update_running(np, running, mean, var, ctx.n, momentum)
    ctx.save_for_backward(y, rstd, weight)
    return (out, mean, rstd, y) if ctx.affine else (y, mean, rstd)


def _affine_running(input: Tensor, mean, var, weight, bias, eps) -> Tensor:
    """Normalize with given per-channel statistics: ``x * scale + shift``."""
    scale = (var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    nd = input.dim()
    if nd == 1:
        return input * scale + shift
    return input * _channel_view(scale, nd) + _channel_view(shift, nd)


def _plain_running(input: Tensor, *tensors) -> bool:
    """Whether `_affine_running` may run on the arrays: nothing is recorded (`records`:
    under no_grad, or nothing needs a gradient), and the input and the per-channel
    tensors (None allowed for weight and bias) hold NumPy float32 or float64 arrays of
    one dtype, the input with a channel dim."""
    if records(input, *tensors):
        return False
    x = input._data
    if type(x) is not np.ndarray or x.dtype not in (np.float32, np.float64) or x.ndim < 2:
        return False
    return all(t is None or (type(t._data) is np.ndarray and t._data.dtype is x.dtype)
               for t in tensors)


def _inference_arrays(input, running_mean, running_var, weight, bias) -> bool:
    """Whether a batch norm at inference can go straight to `_affine_running_arrays`,
    before `_channels`' checks (which then have nothing to report): `_plain_running`
    tensors with every per-channel one of the input's channel count (the running
    statistics given).  (A batch-1 layer's checks cost ~4 us of its ~20.)"""
    if (not isinstance(input, Tensor) or running_mean is None or running_var is None
            or not _plain_running(input, running_mean, running_var, weight, bias)):
        return False
    channels = input._data.shape[1]
    return all(t is None or t._data.size == channels
               for t in (running_mean, running_var, weight, bias))


# Inputs of up to this many elements get their scale and shift from one numba pass
# (`_native_batchnorm.scale_and_shift`), where NumPy's seven small operations are a
# quarter of the layer; larger ones keep NumPy's (and a program that runs none, such as
# examples/train_classifier.py's batches of 256, never builds that kernel).
_SMALL_AFFINE = 1 << 16


def _affine_running_arrays(x, mean, var, weight, bias, eps):
    """`_affine_running` on the arrays (`_plain_running`'s case: a batch norm at
    inference), each step the array operation its op runs, so the two give the same
    bits; the ~8 small ops' bookkeeping goes (a (1, 32, 16, 16) batch norm: 43 -> ~18
    us).  The last two, ``x * scale + shift``, run as one numba pass from
    `_native_batchnorm.MIN_SIZE` elements (rounded as the two operations round: no fused
    multiply-add)."""
    scale_shift = None
    if x.size <= _SMALL_AFFINE:
        scale_shift = _native_batchnorm.scale_and_shift(mean, var, weight, bias, eps)
    if scale_shift is not None:
        scale, shift = scale_shift
    else:
        with np.errstate(all="ignore"):
            scale = 1 / np.sqrt(var + eps)
        if weight is not None:
            scale = scale * weight
        shift = -mean * scale
        if bias is not None:
            shift = shift + bias
    if x.size >= _native_batchnorm.MIN_SIZE and _native_batchnorm.affine_supports(x):
        return _native_batchnorm.channel_affine(x, scale, shift)
    shape = (-1,) + (1,) * (x.ndim - 2)
    return _native_binary.add(_native_binary.multiply(x, scale.reshape(shape)),
                              shift.reshape(shape))


class InferenceBatchNorm(Function):
    """Batch norm with given statistics as one op on the arrays (`_affine_running_arrays`):
    what ``ember.compile`` puts in place of `_affine_running`'s ops in a graph captured
    under no_grad (_compile/patterns.py), where nothing is recorded."""

    _name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, mean, var, weight, bias, eps):
        return _affine_running_arrays(x, mean, var, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("InferenceBatchNorm replays a graph captured under no_grad; it "
                           "has no backward")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) of an (N, C, ...) input.

    In training, with the statistics of the batch (and, when given, the running
    statistics are updated in place: ``running = (1 - momentum) * running + momentum *
    batch``, with the unbiased variance); otherwise with `running_mean`/`running_var`.
    `weight` and `bias` (C,) scale and shift the result.
    """
    if not training and _inference_arrays(input, running_mean, running_var, weight, bias):
        return _make(_affine_running_arrays(
            input._data, running_mean._data, running_var._data,
            None if weight is None else weight._data, None if bias is None else bias._data,
            eps))
    channels = _channels("batch_norm", input, running_mean, running_var, weight, bias)
    if not training:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
        # (what `_plain_running` takes went to the arrays above: `_inference_arrays`)
        return _affine_running(input, running_mean, running_var, weight, bias, eps)
    if input.numel() // channels <= 1:
        raise ValueError("Expected more than 1 value per channel when training, got input "
                         f"size {size_str(input.shape)}")
    dims = (0,) + tuple(range(2, input.dim()))
    running = None
    if running_mean is not None and running_var is not None:
        running = (running_mean._data, running_var._data)
    out = _normalize(input, weight, bias, dims, eps, (channels,) + (1,) * (input.dim() - 2),
                     "NativeBatchNormBackward0", running, momentum)
    if running is not None:
        _bump(running_mean, running_var)
    return out




def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample of an (N, C, ...) input over its spatial dims.

    With `use_input_stats` False, uses `running_mean`/`running_var` instead; with it
    True and running statistics given, updates them with the batch average of the
    per-instance statistics.
    """
    channels = _channels("instance_norm", input, running_mean, running_var, weight, bias)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        return _affine_running(input, running_mean, running_var, weight, bias, eps)
    if _prod(input.shape[2:]) <= 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{size_str(input.shape)}")
    dims = tuple(range(2, input.dim()))
    running = None
    if running_mean is not None and running_var is not None:
        running = (running_mean._data, running_var._data)
    out = _normalize(input, weight, bias, dims, eps, (channels,) + (1,) * len(dims),
                     "NativeBatchNormBackward0", running, momentum)
    if running is not None:
        _bump(running_mean, running_var)
    return out


# ---------------------------------------------------------------------------
# layer norm, group norm, rms norm


def _shape_tuple(op: str, normalized_shape) -> tuple:
    if isinstance(normalized_shape, (int, np.integer)):
        return (int(normalized_shape),)
    try:
        return tuple(int(s) for s in normalized_shape)
    except TypeError:
        raise TypeError(f"{op}(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {type(normalized_shape).__name__}") from None


def _check_normalized_shape(input: Tensor, shape: tuple, weight, bias, star: str) -> None:
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input.shape[input.dim() - k:]) != shape:
        listed = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape=[{listed}], expected input with shape "
                           f"[{star}{listed}], but got input of size{list(input.shape)}")
    for t in (weight, bias):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError("Expected weight to be of same shape as normalized_shape, but "
                               f"got weight of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing dims given by `normalized_shape` (each sample on its
    own), then scale by `weight` and shift by `bias` (both of `normalized_shape`)."""
    _check_float("layer_norm", input)
    shape = _shape_tuple("layer_norm", normalized_shape)
    _check_normalized_shape(input, shape, weight, bias, "*, ")
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    if not records(input, weight, bias):
        out = _layer_norm_arrays(input, weight, bias, dims, eps, shape)
        if out is not None:
            return out
    return _normalize(input, weight, bias, dims, eps, shape, "NativeLayerNormBackward0")


def _layer_norm_arrays(input, weight, bias, dims, eps, shape) -> Tensor | None:
    """Layer norm when nothing is recorded, for `_rows_fast` arrays: the row kernel
    `Normalize` runs, without the op (its four outputs' tensors and node: a transformer's
    (1, 64, 128) layer norm 36.6 -> 22 us, PyTorch 12.1); None for other inputs."""
    x = input._data
    w = None if weight is None else weight._data
    b = None if bias is None else bias._data
    if not _rows_fast(x, w, b, dims, shape):
        return None
    y, out, _, _, _ = _row_layer_norm(x, w, b, dims, eps)
    return _make((y if w is None and b is None else out).reshape(x.shape))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Split the channels (dim 1) into `num_groups` groups and normalize each group of
    each sample; `weight`/`bias` (C,) are per channel."""
    _check_float("group_norm", input)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    c = input.shape[1]
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for t in (weight, bias):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError("Expected weight to be a vector of size equal to the number of "
                               f"channels in input, but got weight of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")
    if _array_node_takes(input, weight, bias):
        return GroupNorm.apply(input, weight, bias, groups=num_groups, eps=eps)
    return _group_norm_composite(input, weight, bias, num_groups, eps)


def _group_norm_composite(input, weight, bias, num_groups, eps):
    """group_norm written with ember ops: what `GroupNorm` computes, for the inputs it does
    not take and for its gradients of second order and more."""
    grouped = input.reshape((input.shape[0], num_groups, -1))
    out = _normalize(grouped, None, None, (2,), eps, (1,), "NativeGroupNormBackward0")
    out = out.reshape(input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input.dim())
    if bias is not None:
        out = out + _channel_view(bias, input.dim())
    return out


def _array_node_takes(x, *params) -> bool:
    """Whether a node computing on NumPy arrays (`GroupNorm`, `RmsNorm`, `L2Normalize`)
    takes these: a non-empty float32/float64 NumPy input, and each parameter (when given)
    of its dtype."""
    data = x._data
    if not (type(data) is np.ndarray and data.dtype in (np.float32, np.float64) and data.size):
        return False
    return all(p is None or (isinstance(p, Tensor) and type(p._data) is np.ndarray
                             and p._data.dtype == data.dtype) for p in params)


class GroupNorm(Function):
    """Group norm of (N, C, *) data as one node, as PyTorch's ``NativeGroupNormBackward0``:
    each sample's channels in `groups` groups, each group standardized and its channels'
    weight and bias applied in one pass by the group-norm kernels
    (ops/_native_group_norm.py); without numba, layer norm's NumPy row kernels, then the
    per-channel affine map in NumPy.

    First-order gradients come from the same kernels.  With ``create_graph`` the backward
    differentiates the composite form (`_group_norm_composite`) recomputed from the saved
    inputs, so that gradients of every order are those of the formula.
    NOTE: composite, on (8, 64, 32, 32) float32 with 32 groups (2-core Intel Xeon,
    2026-12-06): forward 1.29 ms and forward + backward 3.87 ms, against PyTorch's
    0.08 and 0.40-0.83; this node: see docs/performance.md.
    """

    _name = "NativeGroupNormBackward0"
    _fresh_grads = True  # (each gradient is an array made by the backward: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, weight, bias, *, groups, eps):
        ctx.groups, ctx.eps = groups, eps
        # (the input is kept, not the output: as in PyTorch, writing into the output does
        # not spoil the backward)
        ctx.save_for_backward(x, weight, bias)
        if _native_group_norm.supports(x, weight, bias):  # one pass, affine map included
            out, ctx.mean, ctx.rstd = _native_group_norm.forward(x, weight, bias, groups, eps)
            return out
        rows = np.ascontiguousarray(x).reshape(x.shape[0] * groups, -1)
        kernels = _native_rows if _native_rows.supports(rows) else _kernels
        y, _, mean, rstd = kernels.layer_norm(rows, eps, None, None)
        ctx.mean, ctx.rstd = mean.reshape(-1), rstd.reshape(-1)
        y = y.reshape(x.shape)
        return y if weight is None and bias is None else _channel_affine(y, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():  # create_graph: differentiate the composite form
            return recomputed_grads(_group_norm_composite, (x, weight, bias), needs, grad,
                                    num_groups=ctx.groups, eps=ctx.eps)
        w = None if weight is None else weight._data
        if _native_group_norm.supports(x._data, w, None if bias is None else bias._data):
            gx, gw, gb = _native_group_norm.backward(grad._data, x._data, w, ctx.mean,
                                                     ctx.rstd, ctx.groups, needs[0])
            return (None if gx is None else _make(gx), _make(gw) if needs[1] else None,
                    _make(gb) if needs[2] else None)
        g = np.ascontiguousarray(grad._data)
        x_rows = x._data.reshape(x.shape[0] * ctx.groups, -1)
        yd = ((x_rows - ctx.mean[:, None]) * ctx.rstd[:, None]).reshape(x.shape)
        channel = (1, -1) + (1,) * (g.ndim - 2)
        if not (needs[1] or needs[2]):  # (no affine map, or none of its gradients: no sums)
            gy, gw, gb = (g if w is None else g * w.reshape(channel)), None, None
        else:
            axes = (0,) + tuple(range(2, g.ndim))
            gw, gb = (g * yd).sum(axes), g.sum(axes)
            gy = g if w is None else g * w.reshape(channel)
        gx = None
        if needs[0]:
            rows = x.shape[0] * ctx.groups
            rows_gy = np.ascontiguousarray(gy).reshape(rows, -1)
            rows_y = np.ascontiguousarray(yd).reshape(rows, -1)
            kernels = _native_rows if _native_rows.supports(rows_gy, rows_y) else _kernels
            gx = _make(kernels.layer_norm_backward(rows_gy, rows_y, ctx.rstd[:, None], None,
                                                   True, False, False)[0].reshape(x.shape))
        return (gx, _make(gw) if needs[1] else None, _make(gb) if needs[2] else None)


def _channel_affine(y, weight, bias):
    """``y * weight[c] + bias[c]`` over dim 1 of y (either may be None)."""
    shape = (1, -1) + (1,) * (y.ndim - 2)
    out = y * weight.reshape(shape) if weight is not None else y.copy()
    if bias is not None:
        out += bias.reshape(shape)
    return out


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing `normalized_shape` dims
    (`eps` None: the machine epsilon of the input's dtype)."""
    _check_float("rms_norm", input)
    shape = _shape_tuple("rms_norm", normalized_shape)
    _check_normalized_shape(input, shape, weight, None, "*")
    if eps is None:
        eps = float(dtypes.finfo(input.dtype).eps)
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    if _array_node_takes(input, weight):
        return RmsNorm.apply(input, weight, dims=dims, eps=eps)
    return normalization_rms.rms_norm_composite(input, weight, dims, eps)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Divide each element by ``(k + alpha / size * sum of squares over `size` neighbouring
    channels) ** beta`` (zero padding at the ends of the channel dim)."""
    if input.dim() < 3:
        raise ValueError("Expected 3D or higher dimensionality                          "
                         f"input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input

    channels = input.shape[1]
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    pad_shape = lambda m: (input.shape[0], m) + tuple(input.shape[2:])  # noqa: E731
    parts = [sq]
    if before:
        parts.insert(0, sq.new_zeros(pad_shape(before)))
    if after:
        parts.append(sq.new_zeros(pad_shape(after)))
    padded = cat(parts, 1) if len(parts) > 1 else sq
    window = padded.narrow(1, 0, channels)
    for i in range(1, size):
        window = window + padded.narrow(1, i, channels)
    div = (window * (alpha / size) + k).pow(beta)
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` with the norm taken over `dim`."""
    if input.dim() and p == 2 and _array_node_takes(input):
        result = L2Normalize.apply(input, dim=wrap_dim(dim, input.dim()), eps=eps)
    else:
        result = normalization_l2.normalize_composite(input, p, dim, eps)
    return result if out is None else out.copy_(result)


# --- the torch.* forms (different argument orders) ---


def batch_norm_fn(input: Tensor, weight, bias, running_mean, running_var, training: bool,
                  momentum: float, eps: float, cudnn_enabled: bool = True) -> Tensor:
    """``torch.batch_norm(input, weight, bias, running_mean, running_var, training,
    momentum, eps, cudnn_enabled)``."""
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm_fn(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
                  cudnn_enable: bool = True) -> Tensor:
    """``torch.layer_norm``."""
    return layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm_fn(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
                  cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm``."""
    return group_norm(input, num_groups, weight, bias, eps)


def instance_norm_fn(input: Tensor, weight, bias, running_mean, running_var,
                     use_input_stats: bool, momentum: float, eps: float,
                     cudnn_enabled: bool = True) -> Tensor:
    """``torch.instance_norm`` (argument order of the torch namespace)."""
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                         momentum, eps)

