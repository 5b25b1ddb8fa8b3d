"""Op parity sweep tables, part 5: logaddexp, copysign, heaviside, the angle
conversions, diff, block_diag, combinations, cdist, isin and small Tensor queries."""

from __future__ import annotations

from .ops_parity_spec import FI, FLOAT, INT, Case, T, binary, s, vals

NEW_CASES = [
    Case("logaddexp", binary(scalars=(), promote=False), FLOAT),
    Case("logaddexp2", binary(scalars=(), promote=False), FLOAT),
    Case("logaddexp", [s(vals([-float("inf"), float("inf"), 1.0, -3.0]),
                         vals([-float("inf"), float("inf"), 1.0, 2.0]))], FLOAT, tag="inf",
         grad=False),
    Case("copysign", binary(), FI),
    Case("copysign", [s(vals([1.0, -2.0, 0.0, -0.0]), vals([-1.0, 3.0, -2.0, 5.0]))], FLOAT,
         tag="zero"),
    Case("copysign_", [s(T(2, 3), T(3)), s(T(2, 3), -1.5)], FLOAT),
    Case("heaviside", [s(vals([-1.0, 0.0, 2.0, 0.0]), vals([0.5, 0.5, 0.5, 3.0]))],
         FLOAT, grad=False),
    Case("deg2rad", [s(T(2, 3, low=-360, high=360))], FI),
    Case("rad2deg", [s(T(2, 3))], FI),
    Case("deg2rad_", [s(T(2, 3, low=-360, high=360))], FLOAT),
    Case("rad2deg_", [s(T(2, 3))], FLOAT),
    Case("diff", [s(T(5)), s(T(2, 4), n=2), s(T(3, 4), dim=0), s(T(3, 4), 1, 0, T(1, 4)),
                  s(T(2, 3), append=T(2, 2)), s(T(4), n=0)], FI),
    Case("diff", [s(vals([True, False, False, True]))], ("bool",), tag="bool"),
    Case("block_diag", [s(T(2, 2), T(3)), s(T(), T(1, 2), T(2, 1)), s(T(2, 3))], FI),
    Case("combinations", [s(T(4)), s(T(4), 3), s(T(3), with_replacement=True), s(T(3), 0)],
         FI),
    Case("cdist", [s(T(3, 4), T(5, 4)), s(T(3, 4), T(2, 4), p=1.0), s(T(2, 3, 4), T(3, 5, 4)),
                   s(T(3, 4), T(2, 4), p=3.0), s(T(3, 4), T(2, 4), p=0.0),
                   s(T(3, 4), T(2, 4), compute_mode="use_mm_for_euclid_dist"),
                   s(T(30, 3), T(27, 3))], FLOAT),
    Case("isin", [s(T(3, 4, low=0, high=6), T(5, low=0, high=6)),
                  s(T(3, 4, low=0, high=6), T(5, low=0, high=6), invert=True),
                  s(T(3, low=0, high=4), 2)], INT),
    Case("type_as", [s(T(2, 3), T(2, dtype="int64")), s(T(2, 3), T(1, dtype="float64"))],
         FLOAT),
    Case("positive", [s(T(2, 3))], FI),
    Case("is_signed", [s(T(2)), s(T(2, dtype="uint8", low=0, high=3)),
                       s(T(2, dtype="bool"))], FI, grad=False),
    Case("is_same_size", [s(T(2, 3), T(2, 3)), s(T(2, 3), T(3, 2))], FLOAT, grad=False),
    Case("is_nonzero", [s(vals([0.0])), s(vals([[2.5]]))], FLOAT, grad=False),
    Case("subtract_", [s(T(2, 3), T(3))], FLOAT),
    Case("multiply_", [s(T(2, 3), T(3))], FLOAT),
    Case("divide_", [s(T(2, 3), T(3, low=1, high=2))], FLOAT),
    Case("true_divide_", [s(T(2, 3), T(3, low=1, high=2))], FLOAT),
]
