"""The machinery behind ``ember.compile``: capture a model's ops once per input signature,
fuse elementwise chains into generated numba kernels, reuse their buffers across calls,
and replay the graph on later calls.  docs/compile.md tells the story; the files:

- ``program.py``: capture (the jit tracer), guards, the replayed graph;
- ``fusion.py``: finding fusable chains, the `FusedElementwise` op;
- ``codegen.py``: the op table and the generated forward/backward kernels;
- ``memory.py``: the buffer pool (the memory plan);
- ``runner.py``: `CompiledFunction`, the cache of graphs by signature.
"""

from .runner import CompiledFunction, reset_all

__all__ = ["CompiledFunction", "reset_all"]
