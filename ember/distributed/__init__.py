"""ember.distributed: process groups and collectives over MPI (``torch.distributed``'s API).

Start N processes with the launcher, each running the same script::

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3

and in the script::

    import ember.distributed as dist
    dist.init_process_group("mpi")        # rank and world size come from mpiexec
    t = ember.ones(4) * dist.get_rank()
    dist.all_reduce(t)                     # in place, on every rank

The layers: `_group.py` (process groups, failure handling), `_collectives.py` and
`_p2p.py` (the tensor operations), `_objects.py` (object collectives, safe encoding),
`_mismatch.py` (``EMBER_DISTRIBUTED_DEBUG=DETAIL`` checks), `_work.py` (async handles and
the waiting loop with a timeout), `_backend.py` (the interface a backend implements) and
`_mpi.py` (the mpi4py backend).  See docs/distributed.md.
"""

from ._backend import (
    Backend, CommBackend, DistBackendError, DistError, DistNetworkError, NCCLBackend, ReduceOp,
)
from ._collectives import (
    all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single, barrier,
    broadcast, gather, monitored_barrier, reduce, reduce_scatter, reduce_scatter_tensor, scatter,
)
from ._group import (
    GroupMember, ProcessGroup, default_pg_timeout, destroy_process_group, get_backend,
    get_global_rank, get_group_rank, get_node_local_rank, get_pg_count, get_process_group_ranks,
    get_rank, get_world_size, group, init_process_group, is_available, is_gloo_available,
    is_initialized, is_mpi_available, is_nccl_available, new_group,
)
from ._mismatch import DebugLevel, get_debug_level, set_debug_level, set_debug_level_from_env
from ._objects import (
    all_gather_object, broadcast_object_list, gather_object, scatter_object_list,
)
from ._p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from ._work import Future, Work

# PyTorch's old alias of ReduceOp
reduce_op = ReduceOp

__all__ = [
    "Backend", "CommBackend", "DebugLevel", "DistBackendError", "DistError", "DistNetworkError",
    "Future", "GroupMember", "NCCLBackend", "P2POp", "ProcessGroup", "ReduceOp", "Work",
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_debug_level", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "get_pg_count", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "isend", "monitored_barrier", "new_group", "recv",
    "reduce", "reduce_op", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send", "set_debug_level", "set_debug_level_from_env",
]
