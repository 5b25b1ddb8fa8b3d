"""DistributedDataParallel: one model replica per rank, gradients averaged during backward.

The design is PyTorch's (Li et al., "PyTorch Distributed", VLDB 2020), on ember's autograd:

**Construction.** The ranks check that their models have the same parameters (names,
shapes, dtypes), then rank 0's parameters and buffers are broadcast so every replica starts
equal.  Parameters that require grad are grouped into *buckets*: in reverse registration
order (roughly the order backward produces their gradients), per dtype, each at most
``bucket_cap_mb`` (the first one at most 1 MB, so that communication starts early).  A
bucket owns one flat buffer holding its parameters' gradients side by side.

**Backward.** Every parameter has a post-accumulate-grad hook
(``Tensor.register_post_accumulate_grad_hook``): when autograd has written the parameter's
``.grad``, the hook copies it, divided by the world size, into its slot of the bucket buffer
(with ``gradient_as_bucket_view=True``, ``.grad`` *is* that slot and is scaled in place,
which saves both copies) and counts the bucket down.  A bucket whose gradients are all
there starts an ``all_reduce`` of its buffer with ``async_op=True`` (``MPI_Iallreduce``)
right away, while autograd goes on computing the gradients of earlier layers:
communication overlaps the rest of backward.  Buckets are started strictly in index order,
the same on every rank, because MPI pairs collectives by the order they are called in.
Each hook also polls the buckets in flight, which is what moves MPI's transfers forward
(MPI has no progress thread by default).

**The end of backward** (the "final callback").  ember's engine has no queue of callbacks
to run after backward, so the reducer finishes from inside the hook that starts the last
bucket.  That is correct because a parameter's hook runs only once *all* of its gradient
has been summed (the engine runs a leaf's AccumulateGrad once per backward): once every
bucket has started, every parameter's gradient is final.  That hook waits for the buckets
in flight (the summed buckets now hold the averages) and writes them back into ``.grad``,
so when ``loss.backward()`` returns the gradients are averaged and nothing else needs to
happen before ``optimizer.step()``.  Whatever backward still runs after that point only
computes gradients of non-parameters (e.g. inputs), which DDP does not touch.  One backward
per forward is expected: a second ``backward`` through the same graph accumulates locally.

**Parameters without a gradient.** If some parameter takes no part in the loss, its hook
never runs, its bucket never starts and backward ends with gradients not averaged; the
next forward then raises (as PyTorch does).  ``find_unused_parameters=True`` walks the
autograd graph from the forward's outputs to find the parameters it reaches, and marks the
others ready at once (contributing their current ``.grad``, or zeros).  A parameter no rank
used keeps its ``.grad`` untouched.  ``static_graph=True`` does the walk once and reuses it.

**no_sync()** skips the averaging: gradients accumulate locally over several backward
passes, and the first backward outside ``no_sync`` averages the sum.

**join()** lets ranks with fewer batches finish early: they stand in for the others'
collectives with zero gradients until every rank is done.

**Buffers** (batch norm's running statistics) are broadcast from rank 0 before each
forward when ``broadcast_buffers`` is True.

**Checkpoints: the ``module.`` prefix trap.**  The wrapped model is the child ``module``,
so ``ddp.state_dict()`` has keys like ``"module.fc.weight"``, which a plain model refuses.
Save ``ddp.module.state_dict()`` instead (the usual choice: save on rank 0 only), or strip
the prefix when loading::

    state = {k.removeprefix("module."): v for k, v in state.items()}
    model.load_state_dict(state)
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

from ... import distributed as dist
from ..._core.backend import module_of
from ..._core.accumulate import AccumulateGrad
from ..._core.grad_mode import STATE
from ..._core.tensor import Tensor, _make
from ..modules.module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024


class _Bucket:
    """A flat buffer holding the gradients of some parameters, reduced in one call."""

    def __init__(self, index: int, members: list, params: list, xp):
        self.index = index
        self.members = members  # parameter indices
        self.offsets, self.shapes, total = [], [], 0
        for i in members:
            self.offsets.append(total)
            self.shapes.append(params[i]._data.shape)
            total += params[i]._data.size
        self.buffer = xp.zeros(total, dtype=params[members[0]]._data.dtype)
        self.tensor = _make(self.buffer)
        self.views = [_make(self.slot(k)) for k in range(len(members))]
        self.pending = len(members)
        self.work = None

    def slot(self, k: int):
        """The k-th member's part of the buffer, in its parameter's shape."""
        n = 1
        for d in self.shapes[k]:
            n *= d
        return self.buffer[self.offsets[k]: self.offsets[k] + n].reshape(self.shapes[k])


class DistributedDataParallel(Module):
    """Data-parallel training: wrap the model, then train as usual on each rank's shard.

    >>> model = DistributedDataParallel(Net())        # after dist.init_process_group()
    >>> loss_fn(model(x), y).backward()               # .grad now averaged over the ranks
    >>> optimizer.step()

    Arguments follow PyTorch.  `device_ids`/`output_device` must be None for CPU models;
    `dim` is kept for compatibility (one device per rank: inputs are not scattered).
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, **kwargs):
        super().__init__()
        pg = dist._group._resolve(process_group)
        if pg == dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError("DistributedDataParallel: this rank is not in process_group")
        params = [p for _, p in module.named_parameters() if p.requires_grad]
        names = [n for n, p in module.named_parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        on_cpu = all(p.device.type == "cpu" for p in params)
        if on_cpu and (device_ids is not None or output_device is not None):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device GPU modules; for CPU modules they must be None, but got "
                f"device_ids {device_ids}, output_device {output_device}")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.module = module
        self.process_group = pg
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2 ** 20)
        self._params = params
        self._names = names
        self._world = pg.size()
        self._scale = 1.0 / self._world  # gradients are divided as they enter the buckets
        self._verify_same_model(names, params)
        if init_sync:
            self._broadcast_coalesced([p for p in module.parameters()]
                                      + [b for b in module.buffers()])
        self._buckets = self._assign_buckets()
        self._bucket_of = {}
        for b in self._buckets:
            for k, i in enumerate(b.members):
                self._bucket_of[i] = (b, k)
        self._joining = None  # inside join(): whether to divide by the initial world size
        # False: start the buckets only once backward is done (benchmarks/ddp_step.py uses
        # it to measure what overlapping communication with backward gains)
        self._overlap = True
        self._armed = False  # a backward that must be averaged is expected
        self._backward_started = False
        self._ready = [False] * len(params)
        self._used = None  # per parameter: 1 when it got a gradient in this backward
        self._unused_now = ()
        self._static_unused = None
        self._next_bucket = 0
        self._handles = []
        ref = weakref.ref(self)
        for i, p in enumerate(params):
            self._handles.append(p.register_post_accumulate_grad_hook(_hook(ref, i)))

    # ---- construction --------------------------------------------------------------
    def _verify_same_model(self, names: list, params: list) -> None:
        mine = [[n, list(p.shape), p.dtype.name] for n, p in zip(names, params)]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            theirs = [list(e) for e in theirs]
            if theirs != [list(e) for e in everyone[0]]:
                diff = next((a, b) for a, b in zip(everyone[0] + [None] * len(theirs),
                                                   theirs + [None] * len(everyone[0]))
                            if a != b)
                raise RuntimeError(
                    "DistributedDataParallel: the model differs between ranks: rank "
                    f"{self.process_group._ranks[0]} has parameter {diff[0]} where rank "
                    f"{self.process_group._ranks[rank]} has {diff[1]} "
                    "([name, shape, dtype]); every rank must build the same model")

    def _broadcast_coalesced(self, tensors: list, root: int | None = None) -> None:
        """Broadcast tensors from `root` (the group's first rank), one flat buffer per dtype."""
        by_dtype: dict = {}
        for t in tensors:
            by_dtype.setdefault((t._data.dtype, t.device), []).append(t)
        root = self.process_group._ranks[0] if root is None else root
        for group in by_dtype.values():
            xp = module_of(group[0]._data)
            flat = xp.concatenate([t._data.reshape(-1) for t in group])
            dist.broadcast(_make(flat), src=root, group=self.process_group)
            pos = 0
            for t in group:
                n = t._data.size
                t._data[...] = flat[pos: pos + n].reshape(t._data.shape)
                pos += n

    def _assign_buckets(self) -> list:
        """Buckets of parameter indices: reverse order, per dtype, capped in bytes."""
        buckets, open_ = [], {}
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            key = (p._data.dtype, p.device)
            members, nbytes = open_.get(key, ([], 0))
            first = not any(k == key for k, _ in buckets)
            cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap) if first else (
                self.bucket_bytes_cap)
            if members and nbytes + p._data.nbytes > cap:
                buckets.append((key, members))
                members, nbytes = [], 0
            members.append(i)
            open_[key] = (members, nbytes + p._data.nbytes)
        for key, (members, _) in open_.items():
            if members:
                buckets.append((key, members))
        xp = module_of(self._params[0]._data)
        return [_Bucket(j, members, self._params, xp) for j, (_, members) in enumerate(buckets)]

    # ---- forward -------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        self._check_previous_reduction()
        will_sync = STATE.enabled and self.require_backward_grad_sync
        if self._joining is not None:
            self._join_step(will_sync)
        self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if will_sync:
            self._prepare_for_backward(output)
        else:
            self._armed = False
        return output

    def _sync_buffers(self) -> None:
        if self.broadcast_buffers and self.require_forward_param_sync and self._world > 1:
            buffers = [b for b in self.module.buffers()]
            if buffers:
                self._broadcast_coalesced(buffers)

    def _check_previous_reduction(self) -> None:
        if not self._armed or not self._backward_started:
            return  # (a forward whose output got no backward is simply forgotten)
        missing = [self._names[i] for i, r in enumerate(self._ready) if not r]
        self._armed = False
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            "producing loss. You can enable unused parameter detection by passing the keyword "
            "argument `find_unused_parameters=True` to "
            "`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
            "function outputs participate in calculating loss.\nParameters which did not "
            f"receive grad for rank {self.process_group._ranks[self.process_group.rank()]}: "
            f"{', '.join(missing)}")

    def _prepare_for_backward(self, output) -> None:
        self._armed = True
        self._backward_started = False
        self._ready = [False] * len(self._params)
        self._next_bucket = 0
        for b in self._buckets:
            b.pending = len(b.members)
            b.work = None
        self._unused_now = ()
        if self.find_unused_parameters or self.static_graph:
            xp = module_of(self._params[0]._data)
            self._used = xp.zeros(len(self._params), dtype="int32")
            if self.static_graph and self._static_unused is not None:
                unused = self._static_unused
            else:
                reached = _parameters_reached(output)
                unused = tuple(i for i, p in enumerate(self._params) if id(p) not in reached)
                if self.static_graph:
                    self._static_unused = unused
            self._unused_now = unused
            for i in unused:  # ready now; their values are read when their bucket starts
                self._ready[i] = True
                self._bucket_of[i][0].pending -= 1

    # ---- backward: the reducer -------------------------------------------------------
    def _grad_ready(self, i: int) -> None:
        if not self._armed:
            return  # no_sync, or a backward DDP was not asked to average
        if self._ready[i]:
            raise RuntimeError(
                f"Expected to mark a variable ready only once: parameter {self._names[i]} got "
                "a gradient twice in one backward pass under DistributedDataParallel (for "
                "example a second backward through the same graph, or a parameter marked "
                "unused by find_unused_parameters that was used after all)")
        self._ready[i] = True
        self._backward_started = True
        if self._used is not None:
            self._used[i] = 1
        bucket, k = self._bucket_of[i]
        self._copy_in(bucket, k)
        bucket.pending -= 1
        if bucket.pending == 0 and (self._overlap or not any(b.pending for b in self._buckets)):
            self._launch_ready_buckets()
        else:
            self._progress()

    def _copy_in(self, bucket: _Bucket, k: int) -> None:
        """Put a gradient, already divided by the world size, into its bucket slot."""
        p = self._params[bucket.members[k]]
        grad = p._grad
        slot = bucket.slot(k)
        if grad is bucket.views[k]:  # gradient_as_bucket_view: accumulated in place already
            slot *= self._scale
            return
        if grad is None:
            slot[...] = 0
        elif grad.is_sparse:
            raise RuntimeError("DistributedDataParallel does not support sparse gradients "
                               f"(parameter {self._names[bucket.members[k]]})")
        else:
            module_of(slot).multiply(grad._data, self._scale, out=slot)
        if self.gradient_as_bucket_view and grad is not None:
            p._grad = bucket.views[k]

    def _progress(self) -> None:
        """Let MPI move the buckets in flight along (it progresses only inside MPI calls)."""
        for b in self._buckets[: self._next_bucket]:
            if b.work is not None:
                b.work.is_completed()

    def _launch_ready_buckets(self) -> None:
        while self._next_bucket < len(self._buckets):
            b = self._buckets[self._next_bucket]
            if b.pending:
                break
            for k, i in enumerate(b.members):
                if i in self._unused_now:
                    self._copy_in(b, k)
            b.work = dist.all_reduce(b.tensor, group=self.process_group, async_op=True)
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finalize()
        else:
            self._progress()

    def _finalize(self) -> None:
        """Every bucket is in flight: wait, then write the averages back into ``.grad``."""
        self._armed = False
        for b in self._buckets:
            b.work.wait()
        globally_used = None
        if self._used is not None:
            used = _make(self._used)
            dist.all_reduce(used, group=self.process_group)
            globally_used = self._used
        for b in self._buckets:
            for k, i in enumerate(b.members):
                if globally_used is not None and not globally_used[i]:
                    continue  # no rank used it: leave its .grad as it was
                p = self._params[i]
                if self.gradient_as_bucket_view:
                    p._grad = b.views[k]
                elif p._grad is None or p._grad is b.views[k]:
                    p._grad = _make(b.slot(k).copy())
                else:
                    p._grad._data[...] = b.slot(k)

    # ---- user controls ---------------------------------------------------------------
    @contextmanager
    def no_sync(self):
        """Inside this context backward does not average: gradients accumulate locally, and
        the first backward after it averages everything accumulated."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @contextmanager
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):
        """Train on uneven inputs: wrap the training loop in ``with ddp.join():``.

        A rank that runs out of batches leaves the loop and, in this context's exit, stands
        in for the ranks still training: each of their iterations it takes part in the same
        collectives (buffer broadcast, gradient buckets) with zero gradients, so that nobody
        waits forever.  The average divides by the initial world size (or, with
        ``divide_by_initial_world_size=False``, by the ranks still training).  When every
        rank has joined, the parameters of the last rank to join are copied to all ranks.
        Each forward inside the context costs one extra small all-reduce.
        """
        if not enable or self._world == 1:
            yield
            return
        if throw_on_early_termination:
            raise NotImplementedError("DistributedDataParallel.join(throw_on_early_termination="
                                      "True) is not supported")
        self._joining = divide_by_initial_world_size
        try:
            yield
        finally:
            self._joining = None
        self._shadow_until_all_joined(divide_by_initial_world_size)

    def _join_flags(self, active: int, sync: int):
        flags = _make(module_of(self._params[0]._data).asarray([active, sync], dtype="int64"))
        dist.all_reduce(flags, group=self.process_group)
        return int(flags._data[0]), int(flags._data[1])

    def _join_step(self, will_sync: bool) -> None:
        """An active rank's forward under join(): count the ranks still training."""
        active, _ = self._join_flags(1, int(will_sync))
        self._scale = 1.0 / (self._world if self._joining else active)

    def _shadow_until_all_joined(self, by_initial_size: bool) -> None:
        """Mirror the collectives of the ranks still training, until none is."""
        last_joiner = True
        while True:
            active, syncing = self._join_flags(0, 0)
            if active == 0:
                break
            last_joiner = False
            self._sync_buffers()
            if syncing:
                for b in self._buckets:
                    b.buffer[...] = 0
                    dist.all_reduce(b.tensor, group=self.process_group)
                if self.find_unused_parameters or self.static_graph:
                    zeros = module_of(self._params[0]._data).zeros(len(self._params), "int32")
                    dist.all_reduce(_make(zeros), group=self.process_group)
        self._scale = 1.0 / self._world
        me = self.process_group._ranks[self.process_group.rank()]
        who = _make(module_of(self._params[0]._data).asarray([me if last_joiner else -1]))
        dist.all_reduce(who, op=dist.ReduceOp.MAX, group=self.process_group)
        self._broadcast_coalesced(list(self.module.parameters()) + list(self.module.buffers()),
                                  root=int(who._data[0]))

    def extra_repr(self) -> str:
        return (f"world_size={self._world}, buckets={len(self._buckets)}, "
                f"find_unused_parameters={self.find_unused_parameters}")


def _hook(ref, i: int):
    def hook(param: Tensor) -> None:
        ddp = ref()
        if ddp is not None:
            ddp._grad_ready(i)
    return hook


def _parameters_reached(output) -> set:
    """ids of the leaf tensors that the autograd graph of `output` reaches."""
    roots, stack = [], [output]
    while stack:
        obj = stack.pop()
        if isinstance(obj, Tensor):
            roots.append(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif hasattr(obj, "__dataclass_fields__"):
            stack.extend(getattr(obj, f) for f in obj.__dataclass_fields__)
    reached, seen, nodes = set(), set(), []
    for t in roots:
        if not t.requires_grad:
            continue
        if t.grad_fn is None:
            reached.add(id(t))
        else:
            nodes.append(t.grad_fn)
    while nodes:
        node = nodes.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            reached.add(id(node.variable))
            continue
        for child, _ in node.next_functions:
            if child is not None:
                nodes.append(child)
    return reached
