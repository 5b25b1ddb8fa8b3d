"""Op table entries for the differentiable parts of ember/ops/creation.py: meshgrid,
cartesian_prod and the in-place fill_/zero_ (applied to a copy of the input)."""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, Sample


def _vectors(*lengths):
    def samples(rng):
        return [Sample(tuple(rng.uniform(-2, 2, size=(n,)) for n in lengths))]
    return samples


def _flat(parts):
    """meshgrid's outputs as one flat tensor/array (the table compares one output)."""
    if isinstance(parts[0], ember.Tensor):
        return ember.cat([p.reshape(-1) for p in parts])
    return np.concatenate([np.reshape(p, -1) for p in parts])


def _np_cartesian_prod(*arrays):
    if len(arrays) == 1:
        return arrays[0]
    grids = np.meshgrid(*arrays, indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=1)


OPS = [
    OpInfo("meshgrid_ij", lambda *ts: _flat(ember.meshgrid(*ts, indexing="ij")),
           lambda *arrays: _flat(np.meshgrid(*arrays, indexing="ij")), _vectors(3, 2, 2),
           dtypes=FLOATS_AND_INTS),
    OpInfo("meshgrid_xy", lambda *ts: _flat(ember.meshgrid(*ts, indexing="xy")),
           lambda *arrays: _flat(np.meshgrid(*arrays, indexing="xy")), _vectors(3, 2),
           dtypes=FLOATS_AND_INTS),
    OpInfo("cartesian_prod", ember.cartesian_prod, _np_cartesian_prod, _vectors(3, 2),
           dtypes=FLOATS_AND_INTS),
    OpInfo("fill_", lambda x: (x * 1).fill_(2.5), lambda x: np.full_like(x, 2.5),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),))]),
    OpInfo("fill_tensor", lambda x, v: (x * 1).fill_(v),
           lambda x, v: np.broadcast_to(v, x.shape),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)), rng.uniform(-2, 2, size=())))]),
    OpInfo("zero_", lambda x: (x * 1).zero_(), np.zeros_like,
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),))]),
]
