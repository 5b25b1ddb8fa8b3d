"""``ember.multiprocessing``: Python's `multiprocessing`, with tensors that travel shared.

Everything of the standard module is here under the same names (``Process``, ``Queue``,
``get_context``, ``set_start_method`` ...), as in ``torch.multiprocessing``.  Importing it
teaches multiprocessing's pickler to send a CPU tensor as a descriptor of its shared
memory instead of a copy: the tensor is moved into shared memory first
(``share_memory_``), and the receiving process maps the same pages.  So a model whose
parameters are shared (``model.share_memory()``) can be trained Hogwild-style by
processes started with ``fork`` or with ``spawn``, and a tensor put on a ``Queue`` is the
same memory on both ends.

`spawn` / `start_processes` start `nprocs` processes running ``fn(i, *args)`` and report
the first failure in the parent as `ProcessRaisedException` / `ProcessExitedException`.
"""

import multiprocessing
from multiprocessing import *  # noqa: F403 - a drop-in for the standard module

from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [
    "ProcessContext", "ProcessExitedException", "ProcessRaisedException", "spawn",
    "start_processes", "get_sharing_strategy", "set_sharing_strategy",
    "get_all_sharing_strategies", "init_reductions",
] + list(multiprocessing.__all__)

_STRATEGIES = {"file_descriptor"}
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    """How tensors can be shared: ember passes memory file descriptors ("file_descriptor")."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current sharing strategy (always "file_descriptor")."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how tensors are shared; ember supports "file_descriptor" only."""
    if new_strategy == "file_system":
        raise NotImplementedError(
            "ember.multiprocessing.set_sharing_strategy('file_system'): ember shares tensors "
            "through file descriptors only")
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"invalid sharing strategy {new_strategy!r}")


init_reductions()
