"""OpInfo: one description of an op, from which the generic tests are derived.

Each op-family file (``db_<family>.py``) lists OpInfo entries; ``op_db.py`` joins
them.  An entry gives the ember function, a NumPy reference, sample inputs, the
dtypes to test, and how many orders of gradient to check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

import numpy as np

FLOATS = ("float32", "float64")
FLOATS_AND_INTS = ("float32", "float64", "int64")


@dataclass
class Sample:
    """One call: positional args (NumPy arrays become tensors) and keyword args.

    `grad_args` lists the positions of args that are differentiable inputs
    (default: every float array).
    """

    args: tuple
    kwargs: dict = field(default_factory=dict)
    grad_args: tuple | None = None

    def tensor_positions(self) -> list:
        return [i for i, a in enumerate(self.args) if isinstance(a, np.ndarray)]


@dataclass
class OpInfo:
    """One op: how to call it, how to check it, which tests apply."""

    name: str
    op: Callable                       # the ember function
    ref: Callable | None               # NumPy reference (float64 in, array(s) out); None: skip
    samples: Callable                  # samples(rng) -> list[Sample] (float64 arrays)
    dtypes: tuple = FLOATS             # dtypes the forward test runs in
    grad_order: int = 2                # 0 no gradient, 1 gradcheck, 2 + gradgradcheck
    torch_name: str | None = None      # for PyTorch parity of the result dtype
    promotes: bool = False             # a binary op following the promotion rules
    output_index: int | None = None    # when the op returns a tuple, which output to compare
    atol: float = 1e-5
    rtol: float = 1e-4
    gradcheck_atol: float = 1e-5
    nondeterministic_grad: bool = False

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"


def uniform(rng, *shape, low=-2.0, high=2.0):
    """Float64 samples in [low, high)."""
    return rng.uniform(low, high, size=shape)


def positive(rng, *shape, low=0.5, high=2.0):
    """Float64 samples bounded away from zero."""
    return rng.uniform(low, high, size=shape)


def unary_samples(low=-2.0, high=2.0, shapes=((3, 4), (5,), ())):
    """Samples for an elementwise unary op on the given domain."""
    def samples(rng):
        return [Sample((rng.uniform(low, high, size=s),)) for s in shapes]
    return samples


def binary_samples(low=-2.0, high=2.0, low2=None, high2=None, scalar=1.5):
    """Samples for a binary op: same shape, broadcasting both ways, and a scalar."""
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2

    def samples(rng):
        a = lambda *s: rng.uniform(low, high, size=s)  # noqa: E731
        b = lambda *s: rng.uniform(low2, high2, size=s)  # noqa: E731
        out = [
            Sample((a(3, 4), b(3, 4))),
            Sample((a(3, 1), b(1, 4))),
            Sample((a(2, 3, 4), b(4))),
            Sample((a(), b(3))),
        ]
        if scalar is not None:
            out.append(Sample((a(3, 4), scalar)))
        return out
    return samples
