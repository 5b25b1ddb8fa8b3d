"""Broadcasting helpers: sum_to_shape (the one every broadcasting backward uses),
broadcast_shapes, and broadcasts_to."""

from __future__ import annotations


def sum_to_shape(grad, shape: tuple):
    """Sum `grad` (a Tensor) over the dimensions that broadcasting added or stretched.

    ``shape`` is the shape of the input before broadcasting; the result has it.
    """
    shape = tuple(shape)
    gshape = tuple(grad.shape)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    out = grad.sum(dim=dims, keepdim=True) if dims else grad
    if lead:
        out = out.reshape(shape)
    return out


def broadcast_shapes(*shapes, on_mismatch=None) -> tuple:
    """The shape that tensors of `shapes` broadcast to (RuntimeError when they can't).

    `on_mismatch(index, dim, size, partial_shape)` may raise a caller-specific error
    for the first shape (at `index`) that does not fit.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for index, s in enumerate(shapes):
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            if d == out[j] or d == 1:
                continue
            if out[j] == 1:
                out[j] = d
                continue
            if on_mismatch is not None:
                on_mismatch(index, j - ndim, d, out)
            raise RuntimeError(
                f"The size of tensor a ({out[j]}) must match the size of tensor b ({d}) "
                f"at non-singleton dimension {i}"
            )
    return tuple(out)


def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether an array of `shape` broadcasts to `target` unchanged (so that it can be
    added into an array of that shape in place, or read by a loop over `target`)."""
    if shape == target[len(target) - len(shape):]:  # (a linear layer's bias: no loop)
        return True
    return len(shape) <= len(target) and all(
        d == 1 or d == t for d, t in zip(shape[::-1], target[::-1]))
