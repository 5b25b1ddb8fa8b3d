"""The legacy profiler API: ``ember.autograd.profiler.profile`` and ``record_function``.

Same recorder and results as ``ember.profiler.profile``, with the older signature:
``profile(enabled=True, use_cuda=False, record_shapes=False, profile_memory=False,
with_stack=False)``.  ``use_cuda`` is accepted and ignored (ember times ops on the CPU).
"""

from __future__ import annotations

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler.profiler import _ProfileBase, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile(_ProfileBase):  # noqa: N801 - PyTorch's name
    """Context manager recording ops, backward nodes and module calls (legacy API).

    >>> with ember.autograd.profiler.profile(record_shapes=True) as prof:
    ...     y = (x * x).sum(); y.backward()
    >>> print(prof.key_averages().table(sort_by="cpu_time_total"))
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes, profile_memory, with_stack)
        self.enabled = enabled
        self.use_cuda = use_cuda
        self._entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self._entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._entered = True
        self._start_recording()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop_recording()
        return False

    def __str__(self) -> str:
        return self.table()
