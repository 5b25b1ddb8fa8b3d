"""The machinery behind ``ember.compile``: capture a model's ops once per input signature,
fuse elementwise chains into generated numba kernels, reuse their buffers across calls,
and replay the graph on later calls.  docs/compile.md tells the story; the files:

- ``runner.py``: `CompiledFunction`, the cache of graphs by signature;
- ``program.py``: capture (the jit tracer), guards, the compiled graph;
- ``patterns.py``: known sequences of ops rewritten as one fused op (attention's scores);
- ``replay.py``: the graph as one generated straight-line Python function;
- ``graph_node.py``: the training replay, the graph on arrays under one autograd node
  (its generated forward: ``training_forward.py``; whole-function calls inside it:
  ``traced_calls.py``);
- ``fusion.py``: finding fusable chains, the `FusedElementwise` op;
- ``codegen.py``: the op table and the generated forward/backward kernels;
- ``kernel_math.py``: the scalar functions those kernels call, per dtype;
- ``memory.py``: the buffer pool (the memory plan).
"""

from .runner import CompiledFunction, reset_all

__all__ = ["CompiledFunction", "reset_all"]
