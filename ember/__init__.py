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
from ._core.tensor import Size, Tensor, is_tensor
from .ops._util import result_type

is_floating_point = Tensor.is_floating_point
is_complex = Tensor.is_complex
numel = Tensor.numel

from . import _tensor_methods

_tensor_methods.attach()

# --- creation (ops/creation.py) ---
from .ops.creation import (
    as_tensor, empty, empty_like, from_numpy, full, full_like, ones, ones_like, tensor, zeros,
    zeros_like,
)

# --- conversion (ops/conversion.py) ---
from .ops.conversion import clone

# --- arithmetic (ops/arithmetic.py) ---
from .ops.arithmetic import (
    add, div, divide, mul, multiply, neg, negative, rsub, sub, subtract, true_divide,
)

# --- reduction (ops/reduction.py) ---
from .ops.reduction import sum

# --- shape (ops/shape.py) ---
from .ops.shape import permute, reshape, transpose

# --- elementwise (ops/elementwise.py) ---

# --- comparison (ops/comparison.py) ---

# --- indexing (ops/indexing.py) ---

# --- linalg (ops/linalg.py) ---

# --- random (random.py) ---

# --- subpackages ---
from . import accelerator, autograd, cuda
from ._core.dtype import can_cast

__version__ = "0.1.0"
