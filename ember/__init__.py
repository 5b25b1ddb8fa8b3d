"""ember: a deep-learning framework on NumPy with PyTorch's API.

``import ember as torch`` and PyTorch code runs.  This module is the public
namespace: explicit re-exports, no logic.
"""

from ._core import dtype as _dtypes
from ._core.device import device
from ._core.dtype import (
    bfloat16, bool, cdouble, cfloat, complex64, complex128, double, dtype, finfo, float,
    float16, float32, float64, get_default_dtype, half, iinfo, int, int8, int16, int32, int64,
    long, promote_types, set_default_dtype, short, uint8,
)
from ._core.grad_mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)
from ._core.printing import set_printoptions
from ._threads import (
    get_num_interop_threads, get_num_threads, set_num_interop_threads, set_num_threads,
    take_over_blas as _take_over_blas,
)
from ._core.tensor import Size, Tensor, is_tensor
from .ops._util import result_type

_take_over_blas()

is_floating_point = Tensor.is_floating_point
is_signed = Tensor.is_signed
is_same_size = Tensor.is_same_size
is_nonzero = Tensor.is_nonzero
is_complex = Tensor.is_complex
numel = Tensor.numel

from . import _tensor_methods

_tensor_methods.attach()

# --- creation (ops/creation.py) ---
from .ops.creation import (
    arange, as_tensor, cartesian_prod, empty, empty_like, empty_strided, eye, fill_, from_numpy,
    full, full_like, linspace, logspace, meshgrid, ones, ones_like, tensor, tril_indices,
    triu_indices, zero_, zeros, zeros_like,
)
from .ops.creation import range_ as range

# --- conversion (ops/conversion.py) ---
from .ops.conversion import clone
detach, get_device, is_inference = Tensor.detach, Tensor.get_device, Tensor.is_inference

# --- arithmetic (ops/arithmetic.py) ---
from .ops.arithmetic import (
    abs, abs_, absolute, add, div, divide, float_power, floor_divide, fmod, mul, multiply, neg,
    neg_, negative, negative_, pow, reciprocal, reciprocal_, remainder, rsub, square, square_,
    sub, subtract, true_divide,
)
from .ops.arithmetic_fused import addcdiv, addcmul, lerp

# --- reduction (ops/reduction.py) ---
from .ops.reduction import (
    all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, max, mean, min, nanmean,
    nansum, prod, return_types, sum,
)
from .ops.linalg_norms import legacy_norm as norm
from .ops.reduction_stats import logsumexp, std, std_mean, var, var_mean
from .ops.sorting import (
    argsort, bincount, bucketize, cummax, cummin, cumprod, cumsum, histc, kthvalue,
    logcumsumexp, median, mode, msort, nanmedian, searchsorted, sort, topk, unique,
    unique_consecutive,
)

# --- shape (ops/shape.py) ---
from .ops.shape import (
    adjoint, atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, broadcast_tensors,
    broadcast_to, flatten, movedim, moveaxis, permute, ravel, reshape, squeeze, swapaxes,
    swapdims, t, transpose, unflatten, unsqueeze,
)
from .ops.slicing import (
    as_strided, chunk, diag, diag_embed, diagonal, diagonal_copy, narrow, select, split,
    split_with_sizes, tensor_split, unbind,
)
from .ops.joining import (
    cat, column_stack, concat, concatenate, dstack, flip, fliplr, flipud, hstack,
    repeat_interleave, roll, rot90, row_stack, stack, tile, tril, triu, vstack,
)

# --- elementwise (ops/elementwise.py) ---
from .ops.elementwise import (
    acos, acos_, acosh, acosh_, arccos, arccos_, arccosh, arccosh_, arcsin, arcsin_, arcsinh,
    arcsinh_, arctan, arctan_, arctanh, arctanh_, asin, asin_, asinh, asinh_, atan, atan_,
    atanh, atanh_, ceil, ceil_, cos, cos_, cosh, cosh_, exp, exp2, exp2_, exp_, expm1, expm1_,
    fix, fix_, floor, floor_, frac, frac_, log, log10, log10_, log1p, log1p_, log2, log2_, log_,
    relu, relu_, round, round_, rsqrt, rsqrt_, sgn, sign, sin, sin_, sinh, sinh_, sqrt, sqrt_,
    tan, tan_, tanh, tanh_, trunc, trunc_,
)
from .ops.elementwise_special import (
    arctan2, atan2, clamp, clamp_, clamp_max, clamp_max_, clamp_min, clamp_min_, clip, clip_,
    erf, erf_, erfc, erfc_, erfinv, fmax, fmin, hypot, logit, logit_, maximum, minimum,
    nan_to_num, nan_to_num_, sigmoid, sigmoid_, where, xlogy, xlogy_,
)
from .ops.elementwise_binary import (
    copysign, deg2rad, deg2rad_, frexp, gcd, gcd_, heaviside, lcm, lcm_, ldexp, ldexp_,
    logaddexp, logaddexp2, nextafter, rad2deg, rad2deg_, sinc, sinc_,
)
from .ops.combining import (
    block_diag, combinations, diagflat, diagonal_scatter, diff, dist, dsplit, hsplit,
    narrow_copy, renorm, select_scatter, slice_scatter, vsplit,
)
from .ops.distance import cdist
from .ops.statistics import corrcoef, cov, nanquantile, quantile
from .ops.gamma import digamma, lgamma, mvlgamma, polygamma
from .ops.bessel import i0, i0_
from .ops.shape_inplace import resize_as_
from .ops.creation import asarray, scalar_tensor
from .ops.indexing import unravel_index
from .ops.complex import (angle, complex, conj, conj_physical, imag, is_conj, is_neg, isreal,
                          polar, real, resolve_conj, resolve_neg, view_as_complex, view_as_real)
from .ops.signal import (
    bartlett_window, blackman_window, cumulative_trapezoid, hamming_window, hann_window,
    histogram, kaiser_window, trapezoid, trapz,
)
from ._core.device import get_default_device, set_default_device

# numbers PyTorch exposes under its own name
import math as _math

pi, e, inf, nan, newaxis = _math.pi, _math.e, _math.inf, _math.nan, None
from .ops.arithmetic import positive

# --- comparison (ops/comparison.py) ---
from .ops.comparison import (
    allclose, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift,
    bitwise_xor, eq, equal, ge, greater, greater_equal, gt, isclose, isfinite, isinf, isnan,
    isin, isneginf, isposinf, le, less, less_equal, logical_and, logical_not, logical_or,
    logical_xor, lt, ne, not_equal, signbit,
)

# --- indexing (ops/indexing.py) ---
from .ops.indexing import (
    argwhere, index_put, index_put_, masked_fill, masked_scatter, masked_select, nonzero, put,
    take,
)
from .ops.scatter import gather, scatter, scatter_add, scatter_reduce, take_along_dim
from .ops.index_dim import index_add, index_copy, index_fill, index_reduce, index_select

# --- linalg (ops/linalg.py) ---
from .ops.einsum import einsum
from .ops.linalg import (
    addbmm, addmm, addmv, addmv_, addr, baddbmm, bmm, cross, dot, ger, inner, kron, matmul, mm,
    mv, outer, tensordot, trace, vdot,
)
from .ops.linalg_decomp import det, logdet, matrix_power
from .ops.linalg_composite import (
    chain_matmul, cholesky_inverse, cholesky_solve, matrix_exp, triangular_solve, vander,
)
from .ops.linalg_decomp import inv as inverse
from .ops.linalg_decomp import legacy_cholesky as cholesky
from .ops.linalg_decomp import legacy_qr as qr
from .ops.linalg_decomp import legacy_slogdet as slogdet
from .ops.linalg_svd import legacy_svd as svd
from .ops.linalg_svd import pinverse
from .ops.linalg_lu import legacy_lu as lu
from .ops.linalg_lu import legacy_lu_solve as lu_solve
from .ops.linalg_lu import lu_unpack
from .ops.linalg_composite import orgqr

# --- random (random.py, ops/sampling.py) ---
from .ops.sampling import (
    bernoulli, multinomial, normal, poisson, rand, rand_like, randint, randint_like, randn,
    randn_like, randperm,
)
from .random import (
    Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state,
)

# --- activation (ops/activation.py, normalization.py, dropout.py) ---
from .ops.activation import (
    celu, celu_, hardshrink, prelu, rrelu, rrelu_, selu, selu_, threshold, threshold_,
)
from .ops.activation import log_softmax_fn as log_softmax
from .ops.activation import softmax_fn as softmax
from .ops.dropout import alpha_dropout_fn as alpha_dropout
from .ops.dropout import dropout_fn as dropout
from .ops.dropout import dropout_fn_ as dropout_
from .ops.dropout import feature_alpha_dropout_fn as feature_alpha_dropout
from .ops.dropout import feature_dropout
from .ops.normalization import batch_norm_fn as batch_norm
from .ops.normalization import group_norm_fn as group_norm
from .ops.normalization import instance_norm_fn as instance_norm
from .ops.normalization import layer_norm_fn as layer_norm

# --- sparse (sparse.py) and recurrent cells (ops/rnn.py) ---
from . import sparse
from .sparse import sparse_coo, sparse_coo_tensor, strided
from ._core.memory_format import (
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from .ops.sparse_matmul import spmm
from .ops.rnn import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell

# --- subpackages ---
from . import accelerator, amp, autograd, backends, cuda
from ._legacy_types import (
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, ComplexDoubleTensor, ComplexFloatTensor,
    DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor,
    set_default_tensor_type,
)
from .amp import GradScaler, autocast
from .amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
from .backends import (
    are_deterministic_algorithms_enabled, get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled, set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from . import linalg, random
from . import optim
from . import nn
# --- nn functions that PyTorch also exposes at the top level ---
from .nn.functional import (
    adaptive_avg_pool1d, adaptive_max_pool1d, avg_pool1d, bilinear,
    binary_cross_entropy_with_logits, conv1d, conv2d, conv3d, conv_transpose1d,
    conv_transpose2d, conv_transpose3d, cosine_embedding_loss, cosine_similarity, ctc_loss,
    embedding, embedding_bag, hinge_embedding_loss, kl_div, margin_ranking_loss, max_pool1d,
    max_pool1d_with_indices, max_pool2d, max_pool3d, pairwise_distance, pdist, pixel_shuffle,
    pixel_unshuffle, poisson_nll_loss, rms_norm, triplet_margin_loss,
)

from . import distributions, fft, func, special, testing
from .func import vmap
from .ops.stft import istft, stft
from . import ao, quantization
from .nn import quantized as _nn_quantized  # (makes ember.nn.quantized reachable)
from .ao.quantization import (
    dequantize, fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine,
    per_channel_affine, per_channel_symmetric, per_tensor_affine, per_tensor_symmetric, qint8,
    qint32, qscheme, quantize_per_channel, quantize_per_tensor, quint8,
)
from . import onnx
from . import jit
from . import compiler
from .compiler import compile  # noqa: A004 - PyTorch's name
from . import distributed
from . import multiprocessing
from . import profiler
from . import serialization
from ._interop import from_dlpack
from .serialization import load, save
from . import utils
from . import hub, vision
from ._core.dtype import can_cast
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled

from .version import __version__
