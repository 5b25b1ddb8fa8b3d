"""DLPack exchange, PyTorch's ``torch.utils.dlpack`` (implemented in ``ember/_interop.py``).

``from_dlpack(x)`` makes a tensor sharing memory with any DLPack producer (a NumPy,
PyTorch, JAX or CuPy array, or a legacy capsule); ``to_dlpack(t)`` returns a capsule for
consumers that still take capsules.  Modern consumers take the tensor itself:
``np.from_dlpack(t)``, ``torch.from_dlpack(t)``.
"""

from .._interop import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
