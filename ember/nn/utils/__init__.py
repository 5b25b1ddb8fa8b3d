"""``ember.nn.utils``: gradient clipping and parameter/vector conversion."""

from . import clip_grad, convert_parameters
from .clip_grad import (
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad", "convert_parameters", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
    "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector", "vector_to_parameters",
]

# --- packed sequences and parametrizations (rnn.py, parametrize.py, parametrizations.py,
# weight_norm.py, spectral_norm.py) ---
from . import parametrizations, parametrize, rnn, stateless  # noqa: E402
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402

__all__ += ["parametrizations", "parametrize", "rnn", "stateless", "remove_weight_norm",
            "weight_norm",
            "remove_spectral_norm", "spectral_norm"]

# --- batch-norm folding (fusion.py) ---
from .fusion import (  # noqa: E402
    fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights,
)

__all__ += ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
            "fuse_linear_bn_weights"]

# --- pruning, skip_init, conv weight memory formats (prune.py, skip_init.py, memory_format.py)
from . import prune  # noqa: E402
from .skip_init import skip_init  # noqa: E402
from .memory_format import (  # noqa: E402
    convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format,
)

__all__ += ["prune", "skip_init", "convert_conv2d_weight_memory_format",
            "convert_conv3d_weight_memory_format"]
