"""``nn.utils.stateless.functional_call``: the older name of ``ember.func.functional_call``
(deprecated there too)."""

from __future__ import annotations

import warnings
from ...func import functional_call as call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``ember.func.functional_call``, with PyTorch's deprecation warning."""
    warnings.warn("This API is deprecated as of PyTorch 2.0 and will be removed in a future "
                  "version of PyTorch. Please use torch.func.functional_call instead which "
                  "is a drop-in replacement for this API.", FutureWarning, stacklevel=2)
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                strict=strict)
