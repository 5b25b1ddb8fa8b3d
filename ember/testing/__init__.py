"""Testing helpers: assert_close with per-dtype tolerances, make_tensor."""

from ._comparison import assert_allclose, assert_close, default_tolerances, make_tensor

__all__ = ["assert_allclose", "assert_close", "default_tolerances", "make_tensor"]
