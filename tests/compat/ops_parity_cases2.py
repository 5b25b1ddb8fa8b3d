"""The op parity sweep's tables, part 2: reductions, sorting and scans."""

from __future__ import annotations

from .ops_parity_spec import ALL, FI, FLOAT, INT, NONE, Case, D, T, idx, s, vals

INF, NAN = float("inf"), float("nan")


def _reduce(dims=True, empty=True, tuple_dims=True):
    """Full and per-dim reductions, with keepdim, over 0-dim, 1-D, 2-D (and empty) inputs."""
    out = [s(T()), s(T(5)), s(T(2, 3))]
    if dims:
        out += [s(T(2, 3), 0), s(T(2, 3), -1, keepdim=True), s(T(), 0), s(T(2, 3), dim=1)]
        if tuple_dims:
            out += [s(T(2, 3), dim=(0, 1)), s(T(2, 3, 4), (0, 2), True), s(T(2, 3), dim=())]
    if empty:
        out += [s(T(0, 3))] + ([s(T(0, 3), 1), s(T(0, 3), 0)] if dims else [])
    return out


_WIDE = dict(low=-50, high=50)  # integers rarely tie


def _by_dim(**kw):
    """Reductions that return (values, indices) along one dim."""
    return [s(T(5, **kw)), s(T(2, 3, **kw)), s(T(2, 3, **kw), 0), s(T(2, 3, **kw), -1, True),
            s(T(**kw), 0), s(T(0, 3, **kw), 1), s(T(2, 3, **kw), dim=1, keepdim=False)]


REDUCTION_CASES = [
    Case("sum", _reduce(), ALL),
    Case("sum", [s(T(2, 3), dtype=D("float64")), s(T(2, 3, dtype="int64"), 0, dtype=D("float32")),
                 s(T(2, 3, dtype="bool"), 1)], NONE, tag="dtype"),
    Case("nansum", _reduce(), FI),
    Case("nansum", [s(vals([[1.0, NAN], [NAN, NAN]]), 1)], FLOAT, tag="nan"),
    Case("mean", _reduce(), ALL),
    Case("mean", [s(T(2, 3, dtype="int64"), dtype=D("float64"))], NONE, tag="dtype"),
    Case("nanmean", _reduce() + [s(vals([[1.0, NAN], [NAN, NAN]]), 1)], FLOAT),
    Case("prod", _reduce(tuple_dims=False) + [s(vals([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]), 1),
                                              s(vals([0.0, 2.0, 3.0]))], ALL),
    Case("amax", _reduce(**{}), ALL),
    Case("amin", _reduce(), ALL),
    Case("amax", [s(vals([[1.0, 1.0, 0.5], [2.0, -1.0, 2.0]]), 1),
                  s(vals([1.0, NAN, 2.0]))], FLOAT, tag="ties"),
    Case("max", _by_dim(**_WIDE) + [s(T(2, 3), T(3)), s(T(0))], ALL),
    Case("min", _by_dim(**_WIDE) + [s(T(2, 3), T(3)), s(T(0))], ALL),
    Case("max", [s(vals([[1.0, 1.0, 0.5], [2.0, -1.0, 2.0]])),
                 s(vals([[1.0, 1.0, 0.5], [2.0, -1.0, 2.0]]), 1),
                 s(vals([1.0, NAN, 2.0]), 0)], FLOAT, tag="ties"),
    Case("argmax", _by_dim(**_WIDE) + [s(T(0))], FI),
    Case("argmin", _by_dim(**_WIDE), FI),
    Case("argmax", [s(vals([1.0, 3.0, 3.0, 0.0])), s(vals([1.0, NAN, 3.0])),
                    s(vals([[1, 1], [0, 2]]), 1)], FLOAT, tag="ties"),
    Case("aminmax", [s(T(5)), s(T(2, 3), dim=0), s(T(2, 3), dim=-1, keepdim=True), s(T()),
                     s(T(0, 3), dim=1)], ALL),
    Case("all", _reduce(), ALL),
    Case("any", _reduce(), ALL),
    Case("count_nonzero", [s(T(2, 3)), s(T(2, 3), 0), s(T(2, 3), dim=(0, 1)), s(T(0, 3), 1),
                           s(T())], ALL),
    Case("logsumexp", [s(T(2, 3), 1), s(T(2, 3), (0, 1), True), s(T(), 0), s(T(0, 3), 1),
                       s(vals([[-INF, -INF], [INF, 1.0]]), 1)], FLOAT),
    Case("logsumexp", [s(T(2, 3), 1)], ("int64",), tag="int"),
    Case("var", _reduce() + [s(T(2, 3), 1, unbiased=False), s(T(2, 3), 1, correction=0),
                             s(T(2, 3), 1, correction=2, keepdim=True), s(T(2, 3), False),
                             s(T(1, 3), 0)], FLOAT),
    Case("std", _reduce() + [s(T(2, 3), 1, unbiased=False), s(T(2, 3), 1, correction=0),
                             s(T(2, 3), False), s(vals([[1.0, 1.0], [2.0, 3.0]]), 1)], FLOAT),
    Case("var", [s(T(2, 3), 1)], ("int64",), tag="int"),
    Case("var_mean", [s(T(2, 3)), s(T(2, 3), 1), s(T(2, 3), 1, correction=0, keepdim=True)],
         FLOAT),
    Case("std_mean", [s(T(2, 3)), s(T(2, 3), 1), s(T(2, 3), (0, 1), unbiased=False)], FLOAT),
    Case("norm", [s(T(2, 3)), s(T(2, 3), 1), s(T(2, 3), 3), s(T(2, 3), 0.5), s(T(2, 3), INF),
                  s(T(2, 3), -INF), s(T(2, 3), 0), s(T(2, 3), "fro"), s(T(2, 3), 2, 1),
                  s(T(2, 3), 1, -1, True), s(T(2, 3), p=2, dim=(0, 1)), s(T(2, 3), "nuc"),
                  s(T(2, 3), "fro", (0, 1)), s(T()), s(T(0, 3)), s(T(2, 3), -1),
                  s(vals([[0.0, 0.0], [3.0, 4.0]]), 2, 1), s(vals([0.0, 1.0, -2.0]), 3),
                  s(T(2, 3, 4), p=2, dim=(0, 2)), s(T(2, 3), dtype=D("float64"))], FLOAT),
    Case("norm", [s(T(2, 3))], ("int64",), tag="int"),
    Case("median", _by_dim(**_WIDE), FI),
    Case("median", [s(vals([1.0, NAN, 0.0])), s(vals([[1.0, NAN, 0.0], [1.0, 2.0, 3.0]]), 1),
                    s(vals([1.0, 2.0, 2.0, 3.0]))], FLOAT, tag="special"),
    Case("nanmedian", _by_dim(**_WIDE) + [s(vals([1.0, NAN, 0.0])),
                                          s(vals([[1.0, NAN], [NAN, NAN]]), 1)], FLOAT),
    Case("mode", [s(idx(1, 2, 2, 3)), s(vals([[1, 1, 2], [3, 2, 2]]), 1),
                  s(vals([[1, 1, 2], [3, 2, 2]]), 0, True)], FI),
    Case("kthvalue", [s(T(5, **_WIDE), 2), s(T(2, 3, **_WIDE), 1, 0), s(T(2, 3, **_WIDE), 3, -1,
                                                                      True), s(T(**_WIDE), 1)],
         FI),
]

SCAN_SORT_CASES = [
    Case("cumsum", [s(T(5), 0), s(T(2, 3), 1), s(T(2, 3), -2), s(T(), 0), s(T(0, 3), 1),
                    s(T(2, 3), 1, dtype=D("float64"))], ALL),
    Case("cumprod", [s(T(5), 0), s(T(2, 3), 1), s(T(), 0), s(vals([1.0, 0.0, 2.0, 3.0]), 0),
                     s(vals([[0.0, 0.0, 2.0]]), 1)], ALL),
    Case("cumsum_", [s(T(2, 3), 1)], FLOAT),
    Case("cumprod_", [s(T(2, 3), 1)], FLOAT),
    Case("cummax", [s(T(5, **_WIDE), 0), s(T(2, 3, **_WIDE), 1), s(T(**_WIDE), 0),
                    s(vals([1.0, 3.0, 3.0, 2.0]), 0)], FI),
    Case("cummin", [s(T(5, **_WIDE), 0), s(T(2, 3, **_WIDE), 1)], FI),
    Case("logcumsumexp", [s(T(5), 0), s(T(2, 3), 1), s(T(), 0), s(vals([-INF, 0.0, -INF]), 0)],
         FLOAT),
    Case("sort", [s(T(5, **_WIDE)), s(T(2, 3, **_WIDE), 0), s(T(2, 3, **_WIDE), descending=True),
                  s(T(**_WIDE)), s(T(0, 3)), s(T(4, **_WIDE), stable=True)], ALL),
    Case("sort", [s(vals([2.0, NAN, 1.0, -INF])), s(vals([2.0, NAN, 1.0, -INF]), descending=True)],
         FLOAT, tag="nan"),
    Case("argsort", [s(T(5, **_WIDE)), s(T(2, 3, **_WIDE), 0), s(T(2, 3, **_WIDE), -1, True),
                     s(vals([3, 1, 1, 2]), stable=True)], FI),
    Case("msort", [s(T(3, 2, **_WIDE)), s(T(4, **_WIDE))], FI),
    Case("topk", [s(T(5, **_WIDE), 2), s(T(2, 4, **_WIDE), 2, 0), s(T(2, 4, **_WIDE), 1,
                                                                    largest=False),
                  s(T(2, 4, **_WIDE), 0), s(T(**_WIDE), 1)], FI),
    Case("unique", [s(vals([3, 1, 2, 1, 3])), s(vals([3, 1, 2, 1, 3]), return_inverse=True),
                    s(vals([3, 1, 2, 1, 3]), return_counts=True, return_inverse=True),
                    s(vals([[1, 2], [1, 2], [0, 1]]), dim=0, return_counts=True),
                    s(vals([[1, 2], [1, 2], [0, 1]]), return_inverse=True)], FI + ("bool",),
         grad=False),
    Case("unique_consecutive", [s(vals([1, 1, 2, 2, 3, 1])),
                                s(vals([1, 1, 2, 2, 3, 1]), return_counts=True,
                                  return_inverse=True),
                                s(vals([[1, 2], [1, 2], [0, 1]]), dim=0)], FI, grad=False),
    Case("bincount", [s(idx(0, 1, 1, 3)), s(idx(0, 1, 1, 3), minlength=6),
                      s(idx(0, 1, 1, 3), T(4)), s(idx())], FLOAT),
    Case("histc", [s(T(10), 4), s(T(10), 5, -1, 1), s(vals([1.0, 2.0, 1.0]), 2),
                   s(T(2, 5), bins=3, min=0, max=2)], FLOAT),
    Case("searchsorted", [s(vals([1.0, 3.0, 5.0]), vals([0.0, 3.0, 6.0])),
                          s(vals([1.0, 3.0, 5.0]), vals([3.0, 4.0]), right=True),
                          s(vals([1.0, 3.0, 5.0]), 3.0),
                          s(vals([[1.0, 3.0], [2.0, 4.0]]), vals([[2.0], [4.0]]), side="right"),
                          s(vals([1.0, 3.0, 5.0]), vals([2.0]), out_int32=True)], FI),
    Case("bucketize", [s(vals([0.0, 3.0, 6.0]), vals([1.0, 3.0, 5.0])),
                       s(vals([[0.0, 3.0], [4.0, 6.0]]), vals([1.0, 3.0, 5.0]), right=True),
                       s(3.0, vals([1.0, 3.0, 5.0]))], FI, variants=("fn",)),
]

REDUCTION_CASES += [Case("max", [s(T(2, 3, dtype="int64", **_WIDE), T(3))], NONE, tag="promote"),
                    Case("argmax", [s(T(2, 3), keepdim=True)], INT, tag="keepdim")]
