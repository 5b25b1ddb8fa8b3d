"""Op table entries for ember/ops/shape.py (views) and ember/ops/joining.py (copies)."""

import itertools

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, Sample


def one(*shapes, **kwargs):
    """Samples: one input of each shape (uniform in [-2, 2))."""
    def samples(rng):
        return [Sample((rng.uniform(-2, 2, size=s),), **kwargs) for s in shapes]
    return samples


def many(*groups):
    """Samples: several inputs per call, one group of shapes per sample."""
    def samples(rng):
        return [Sample(tuple(rng.uniform(-2, 2, size=s) for s in group)) for group in groups]
    return samples


def _block_diag_ref(*blocks):
    blocks = [np.atleast_2d(b) for b in blocks]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _combinations_ref(x, r=2, with_replacement=False):
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    return np.array(list(pick(x, r)))


def _slice_scatter_ref(x, src):
    out = x.copy()
    out[:, 0:4:2] = src
    return out


def _diagonal_scatter_ref(x, src):
    out = x.copy()
    index = np.arange(src.shape[0])
    out[index, index + 1] = src
    return out


def _split_ref(x, size, axis=0):
    return np.split(x, range(size, x.shape[axis], size), axis=axis)


def _unfold_ref(x, dim, size, step):
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
    return windows[(slice(None),) * dim + (slice(None, None, step),)]


def _diag_embed_ref(x, offset=0):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n))
    for i in range(x.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = x[..., i]
    return out


def _as_strided_ref(x, size, stride):
    return np.lib.stride_tricks.as_strided(
        np.ascontiguousarray(x), size, [s * x.itemsize for s in stride]).copy()


def _setitem(key):
    def op(x, v):
        y = x * 1
        y[key] = v
        return y

    def ref(x, v):
        y = x.copy()
        y[key] = v
        return y
    return op, ref


_set_row, _set_row_ref = _setitem(0)
_set_col, _set_col_ref = _setitem((slice(None), 1))
_set_fancy, _set_fancy_ref = _setitem(([0, 2],))
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False,
                                                                            False]])


OPS = [
    # views --------------------------------------------------------------
    OpInfo("view", lambda x: x.view(4, 3), lambda x: x.reshape(4, 3), one((3, 4)),
           dtypes=FLOATS_AND_INTS),
    OpInfo("reshape", lambda x: ember.reshape(x, (-1, 2)), lambda x: x.reshape(-1, 2),
           one((3, 4), (2, 3, 2))),
    OpInfo("reshape_copy", lambda x: x.t().reshape(-1), lambda x: x.T.reshape(-1), one((3, 4))),
    OpInfo("permute", lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1),
           one((2, 3, 4))),
    OpInfo("transpose", lambda x: ember.transpose(x, 0, -1), lambda x: np.swapaxes(x, 0, -1),
           one((2, 3, 4), (3, 2))),
    OpInfo("expand", lambda x: x.expand(2, 3, 4), lambda x: np.broadcast_to(x, (2, 3, 4)),
           one((3, 1), (4,))),
    OpInfo("flatten", lambda x: ember.flatten(x, 1), lambda x: x.reshape(x.shape[0], -1),
           one((2, 3, 4), (3, 2)), dtypes=FLOATS_AND_INTS),
    OpInfo("flatten_all", ember.flatten, lambda x: x.reshape(-1), one((2, 3), ())),
    OpInfo("unflatten", lambda x: ember.unflatten(x, 1, (2, -1)),
           lambda x: x.reshape(x.shape[0], 2, -1), one((3, 4))),
    OpInfo("ravel", ember.ravel, np.ravel, one((2, 3))),
    OpInfo("squeeze", ember.squeeze, np.squeeze, one((1, 3, 1), (2, 3))),
    OpInfo("squeeze_dim", lambda x: ember.squeeze(x, 0), lambda x: np.squeeze(x, 0),
           one((1, 3, 1))),
    OpInfo("squeeze_dims", lambda x: ember.squeeze(x, (0, 1, 2)), lambda x: x.reshape(3),
           one((1, 3, 1))),
    OpInfo("unsqueeze", lambda x: ember.unsqueeze(x, -1), lambda x: x[..., None],
           one((3, 4), ()), dtypes=FLOATS_AND_INTS),
    OpInfo("swapaxes", lambda x: ember.swapaxes(x, 0, 1), lambda x: np.swapaxes(x, 0, 1),
           one((2, 3))),
    OpInfo("t", ember.t, lambda x: x.T, one((2, 3), (3,))),
    OpInfo("T", lambda x: x.T, lambda x: x.T, one((2, 3))),
    OpInfo("mT", lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2), one((2, 3, 4))),
    OpInfo("mH", lambda x: x.mH, lambda x: np.swapaxes(x, -1, -2), one((2, 3))),
    OpInfo("movedim", lambda x: ember.movedim(x, (0, 1), (2, 0)),
           lambda x: np.moveaxis(x, (0, 1), (2, 0)), one((2, 3, 4))),
    OpInfo("broadcast_to", lambda x: ember.broadcast_to(x, (2, 3)),
           lambda x: np.broadcast_to(x, (2, 3)), one((3,), (2, 1))),
    OpInfo("broadcast_tensors", ember.broadcast_tensors, np.broadcast_arrays,
           many([(3, 1), (4,)])),
    OpInfo("atleast_2d", ember.atleast_2d, np.atleast_2d, one((), (3,), (2, 3))),
    OpInfo("atleast_3d", ember.atleast_3d, np.atleast_3d, one((), (3,), (2, 3))),
    OpInfo("narrow", lambda x: ember.narrow(x, 1, 1, 2), lambda x: x[:, 1:3], one((3, 4))),
    OpInfo("select", lambda x: ember.select(x, 1, -1), lambda x: x[:, -1], one((3, 4))),
    OpInfo("split", lambda x: ember.split(x, 2, 1), lambda x: _split_ref(x, 2, 1),
           one((3, 5))),
    OpInfo("split_sizes", lambda x: ember.split(x, [1, 3]), lambda x: np.split(x, [1]),
           one((4, 2))),
    OpInfo("tensor_split", lambda x: ember.tensor_split(x, 3),
           lambda x: np.array_split(x, 3), one((7, 2))),
    OpInfo("chunk", lambda x: ember.chunk(x, 2, 0), lambda x: np.array_split(x, 2),
           one((4, 3))),
    OpInfo("unbind", lambda x: ember.unbind(x, 1),
           lambda x: [x[:, i] for i in range(x.shape[1])], one((2, 3))),
    OpInfo("diagonal", ember.diagonal, lambda x: np.diagonal(x), one((3, 4), (2, 3, 3))),
    OpInfo("diagonal_offset", lambda x: ember.diagonal(x, -1, 1, 2),
           lambda x: np.diagonal(x, -1, 1, 2), one((2, 3, 4))),
    OpInfo("diag_embed", ember.diag_embed, _diag_embed_ref, one((3,), (2, 3))),
    OpInfo("diag_embed_offset", lambda x: ember.diag_embed(x, 1),
           lambda x: _diag_embed_ref(x, 1), one((2, 3))),
    OpInfo("unfold", lambda x: x.unfold(1, 2, 1), lambda x: _unfold_ref(x, 1, 2, 1),
           one((2, 5))),
    OpInfo("unfold_step", lambda x: x.unfold(0, 2, 2), lambda x: _unfold_ref(x, 0, 2, 2),
           one((5, 2))),
    OpInfo("as_strided", lambda x: ember.as_strided(x, (3, 2), (1, 2)),
           lambda x: _as_strided_ref(x, (3, 2), (1, 2)), one((3, 3))),
    OpInfo("getitem_basic", lambda x: x[1:, None, ::2], lambda x: x[1:, None, ::2],
           one((3, 4)), dtypes=FLOATS_AND_INTS),
    OpInfo("getitem_int", lambda x: x[-1, ..., 1], lambda x: x[-1, ..., 1], one((3, 2, 4))),
    # copies ---------------------------------------------------------------
    OpInfo("cat", lambda *xs: ember.cat(xs, 1), lambda *xs: np.concatenate(xs, 1),
           many([(2, 3), (2, 1), (2, 2)], [(3, 2)]), dtypes=FLOATS_AND_INTS),
    OpInfo("cat_legacy_empty", lambda a, b: ember.cat([a, ember.zeros(0, dtype=a.dtype), b]),
           lambda a, b: np.concatenate([a, b]), many([(2, 3), (1, 3)])),
    OpInfo("stack", lambda *xs: ember.stack(xs, -1), lambda *xs: np.stack(xs, -1),
           many([(2, 3), (2, 3)]), dtypes=FLOATS_AND_INTS),
    OpInfo("hstack", lambda *xs: ember.hstack(xs), lambda *xs: np.hstack(xs),
           many([(2, 3), (2, 1)], [(3,), (2,)])),
    OpInfo("vstack", lambda *xs: ember.vstack(xs), lambda *xs: np.vstack(xs),
           many([(3,), (2, 3)])),
    OpInfo("dstack", lambda *xs: ember.dstack(xs), lambda *xs: np.dstack(xs),
           many([(2, 3), (2, 3)])),
    OpInfo("column_stack", lambda *xs: ember.column_stack(xs),
           lambda *xs: np.column_stack(xs), many([(3,), (3, 2)])),
    OpInfo("repeat", lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3)),
           one((2, 3), (2,)), dtypes=FLOATS_AND_INTS),
    OpInfo("tile", lambda x: ember.tile(x, (2,)), lambda x: np.tile(x, 2), one((2, 3))),
    OpInfo("repeat_interleave", lambda x: ember.repeat_interleave(x, 2, 1),
           lambda x: np.repeat(x, 2, 1), one((2, 3))),
    OpInfo("repeat_interleave_flat", lambda x: ember.repeat_interleave(x, 2),
           lambda x: np.repeat(x, 2), one((2, 3))),
    OpInfo("repeat_interleave_tensor",
           lambda x: ember.repeat_interleave(x, ember.tensor([1, 0, 3]), 0),
           lambda x: np.repeat(x, [1, 0, 3], 0), one((3, 2))),
    OpInfo("flip", lambda x: ember.flip(x, (0, -1)), lambda x: np.flip(x, (0, -1)),
           one((2, 3, 4)), dtypes=FLOATS_AND_INTS),
    OpInfo("fliplr", ember.fliplr, np.fliplr, one((2, 3))),
    OpInfo("flipud", ember.flipud, np.flipud, one((2, 3))),
    OpInfo("roll", lambda x: ember.roll(x, (1, -2), (0, 1)),
           lambda x: np.roll(x, (1, -2), (0, 1)), one((3, 4))),
    OpInfo("roll_flat", lambda x: ember.roll(x, 2), lambda x: np.roll(x, 2), one((3, 4))),
    OpInfo("rot90", lambda x: ember.rot90(x, 1, (0, 1)), lambda x: np.rot90(x, 1, (0, 1)),
           one((2, 3))),
    OpInfo("rot90_k3", lambda x: ember.rot90(x, -1, (1, 2)), lambda x: np.rot90(x, -1, (1, 2)),
           one((2, 3, 4))),
    OpInfo("tril", lambda x: ember.tril(x, -1), lambda x: np.tril(x, -1),
           one((3, 4), (2, 3, 3)), dtypes=FLOATS_AND_INTS),
    OpInfo("triu", lambda x: ember.triu(x, 1), lambda x: np.triu(x, 1), one((3, 4))),
    OpInfo("triu_inplace", lambda x: (x * 1).triu_(), lambda x: np.triu(x), one((3, 3))),
    OpInfo("diag", ember.diag, np.diag, one((3,), (3, 4))),
    OpInfo("diag_offset", lambda x: ember.diag(x, -1), lambda x: np.diag(x, -1),
           one((3,), (3, 4))),
    OpInfo("diff", ember.diff, np.diff, one((5,), (3, 4))),
    OpInfo("diff_n2_dim0", lambda x: ember.diff(x, n=2, dim=0),
           lambda x: np.diff(x, n=2, axis=0), one((4, 3))),
    OpInfo("diff_prepend_append", lambda x, a, b: ember.diff(x, prepend=a, append=b),
           lambda x, a, b: np.diff(x, prepend=a, append=b), many([(2, 3), (2, 1), (2, 2)])),
    OpInfo("block_diag", ember.block_diag, _block_diag_ref, many([(2, 2), (3,)], [(), (1, 2)])),
    OpInfo("combinations", ember.combinations, _combinations_ref, one((4,))),
    OpInfo("diagflat", ember.diagflat, np.diagflat, one((3,), (2, 2))),
    OpInfo("narrow_copy", lambda x: ember.narrow_copy(x, 1, 1, 2), lambda x: x[:, 1:3].copy(),
           one((3, 4))),
    OpInfo("hsplit", lambda x: ember.hsplit(x, 2), lambda x: tuple(np.hsplit(x, 2)), one((3, 4)),
           output_index=1),
    OpInfo("select_scatter", lambda x, s: ember.select_scatter(x, s, 0, 1),
           lambda x, s: np.concatenate([x[:1], s[None], x[2:]]), many([(3, 4), (4,)])),
    OpInfo("slice_scatter", lambda x, s: ember.slice_scatter(x, s, 1, 0, 4, 2),
           _slice_scatter_ref, many([(3, 5), (3, 2)])),
    OpInfo("diagonal_scatter", lambda x, s: ember.diagonal_scatter(x, s, 1),
           _diagonal_scatter_ref, many([(3, 4), (3,)])),
    OpInfo("combinations_3_replacement",
           lambda x: ember.combinations(x, 3, with_replacement=True),
           lambda x: _combinations_ref(x, 3, True), one((3,))),
    # setitem through views ------------------------------------------------
    OpInfo("setitem_row", _set_row, _set_row_ref, many([(3, 4), (4,)], [(3, 4), (1,)])),
    OpInfo("setitem_column", _set_col, _set_col_ref, many([(3, 4), (3,)])),
    OpInfo("setitem_fancy", _set_fancy, _set_fancy_ref, many([(3, 4), (2, 4)], [(3, 4), (4,)])),
]
