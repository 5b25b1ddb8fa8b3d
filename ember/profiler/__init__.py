"""ember.profiler: where the time goes, op by op.

``profile`` records every op (forward), backward node, ``nn.Module`` call and
``record_function`` scope with its self and total time, call count, input shapes
and bytes allocated; ``key_averages().table()`` prints PyTorch's summary table and
``export_chrome_trace`` writes a trace for chrome://tracing or Perfetto.
"""

from ._events import EventList, FunctionEvent, FunctionEventAvg, Interval
from .profiler import (
    ProfilerAction, ProfilerActivity, profile, record_function, schedule,
    supported_activities, tensorboard_trace_handler,
)

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "ProfilerAction",
           "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]
