"""Selective activation checkpointing: decide, per op, what backward keeps.

Two tools:

* A **policy** for ``checkpoint(..., use_reentrant=False, context_fn=...)``:
  ``create_selective_checkpoint_contexts(policy_fn_or_list)`` says, for each op run
  inside the checkpointed function, whether its outputs are kept (``MUST_SAVE`` /
  ``PREFER_SAVE``: cached in forward, and the op is skipped when the function is
  recomputed) or recomputed (``PREFER_RECOMPUTE`` / ``MUST_RECOMPUTE``).
  ``policy_fn(ctx, op, *args, **kwargs)`` gets the op's `Function` class; a list
  names the ops to save (classes, or names as the profiler shows them: "mat_mul",
  "add_product", or class names "MatMul").

* A **memory budget**: ``plan_memory_budget(fn, *args, budget_bytes=B)`` runs `fn`
  once to see what its ops save, then chooses which saved activations to drop so that
  the bytes kept, plus the working memory of the worst recomputation, stay within
  `B` for the least recomputation time (greedy: drop first the tensors with the most
  bytes per microsecond of recompute).  ``plan.run(fn, *args)`` then runs `fn` under
  that plan: a dropped tensor is recomputed on its own when backward needs it, by
  re-running the op that made it (and, recursively, the ops behind any of that op's
  inputs that were dropped too).  Ops that draw random numbers, and tensors changed
  in place after they were made, are always kept.  ``print(plan)`` shows the choice.
  `MemoryBudget(B)` plans on its first call and reuses the plan.
"""

from __future__ import annotations

import enum
import time
import warnings
import weakref

from .. import random as _random
from .._core.function import as_array
from .._core.grad_mode import enable_grad
from .._core.tensor import Tensor, _make
from ..ops._observer import Observer, run_op
from .graph import saved_tensors_hooks
from ..profiler._table import format_memory
from ..profiler.profiler import op_name

__all__ = ["BudgetPlan", "CheckpointPolicy", "MemoryBudget", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts", "plan_memory_budget"]


class CheckpointPolicy(enum.Enum):
    """Whether an op's outputs are kept for backward or recomputed."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


class SelectiveCheckpointContext:
    """What a policy function is told about the call: ``is_recompute``."""

    def __init__(self, *, is_recompute: bool):
        self.is_recompute = is_recompute


class _PolicyContext:
    """The forward context of selective checkpointing: carries the policy to
    ``checkpoint``, which applies it (as a context manager it does nothing itself)."""

    def __init__(self, policy, allow_cache_entry_mutation: bool):
        self.policy = policy
        self.allow_cache_entry_mutation = allow_cache_entry_mutation

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False




def _matches(cls, item) -> bool:
    if isinstance(item, str):
        return item in (op_name(cls), cls.__name__)
    return isinstance(item, type) and issubclass(cls, item)


def create_selective_checkpoint_contexts(policy_fn_or_list,
                                         allow_cache_entry_mutation: bool = False):
    """The ``context_fn`` result for selective checkpointing: (forward ctx, recompute ctx).

    >>> from functools import partial
    >>> policy = partial(create_selective_checkpoint_contexts, ["mat_mul"])
    >>> y = checkpoint(block, x, use_reentrant=False, context_fn=policy)
    """
    if isinstance(policy_fn_or_list, (list, tuple, set)):
        items = tuple(policy_fn_or_list)

        def policy(ctx, op, *args, **kwargs):
            if any(_matches(op, item) for item in items):
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        user = policy_fn_or_list

        def policy(ctx, op, *args, **kwargs):
            result = user(ctx, op, *args, **kwargs)
            if isinstance(result, bool):  # PyTorch accepts True (save) / False (recompute)
                return CheckpointPolicy.MUST_SAVE if result else CheckpointPolicy.PREFER_RECOMPUTE
            if not isinstance(result, CheckpointPolicy):
                raise TypeError("selective checkpointing: the policy function must return a "
                                f"CheckpointPolicy, got {type(result).__name__}")
            return result
    else:
        raise TypeError("create_selective_checkpoint_contexts: expected a policy function or a "
                        f"list of ops, got {type(policy_fn_or_list).__name__}")
    return _PolicyContext(policy, allow_cache_entry_mutation), _PolicyContext(None, False)


# ---------------------------------------------------------------------------
# the memory budget: tracing

def _rng_fingerprint():
    cpu = _random.default_generator._np.bit_generator.state["state"]["state"]
    return cpu, tuple(g._offset for g in _random._cuda_generators.values())


class _Op:
    """One op call of the traced function: how to run it again, and what it cost."""

    __slots__ = ("cls", "inputs", "params", "cost_ns", "random", "out_bytes", "out_shapes")

    def __init__(self, cls, inputs, params):
        self.cls, self.inputs, self.params = cls, inputs, params
        self.cost_ns = 0
        self.random = False
        self.out_bytes = ()
        self.out_shapes = ()


class _Recipes(Observer):
    """Watches a run of the function: numbers its ops, remembers how each output was made
    (the recipe), and which array each saved tensor is (through saved-tensor hooks)."""

    def __init__(self, tracing: bool):
        self.tracing = tracing
        self.ops: list = []
        self.made: dict = {}      # id(array) -> (k, i, weakref(array), counter, version)
        self.by_key: dict = {}    # (k, i) -> (weakref(array), counter, version)
        # (k, i) -> the (k, i) whose memory it is (itself; the base of a view), or None for
        # memory from outside the function (a view of a parameter)
        self.owner: dict = {}
        self.current = -1         # the op now running
        # Saves made while an op runs may be its own outputs, not registered yet: they are
        # settled (`settle`) once the op returns.
        self.pending: list = []

    def source(self, t: Tensor):
        """(k, i) if `t` is output i of op k, unchanged since; else None."""
        entry = self.made.get(id(t._data))
        if entry is None:
            return None
        k, i, ref, counter, version = entry
        if ref() is not t._data or counter is not t._version or counter.value != version:
            return None
        return k, i

    def op(self, cls, args, params):
        k = len(self.ops)
        inputs = []
        for a in args:
            src = self.source(a) if isinstance(a, Tensor) else None
            if src is not None:
                inputs.append(("op", src))
            elif isinstance(a, Tensor):
                inputs.append(("ext", (a, a._version.value)))
            else:
                inputs.append(("val", a))
        record = _Op(cls, tuple(inputs), params)
        self.ops.append(record)
        before = _rng_fingerprint() if self.tracing else None
        outer, self.current = self.current, k
        start = time.perf_counter_ns()
        try:
            result = run_op(self.prev, cls, args, params)
        finally:
            self.current = outer
        record.cost_ns = time.perf_counter_ns() - start
        if self.tracing:
            record.random = _rng_fingerprint() != before
        outs = result if isinstance(result, tuple) else (result,)
        record.out_bytes = tuple(o._data.nbytes if isinstance(o, Tensor) else 0 for o in outs)
        record.out_shapes = tuple(tuple(o._data.shape) if isinstance(o, Tensor) else ()
                                  for o in outs)
        shares = cls._is_view or cls._inplace
        base = self.owner.get(inputs[0][1]) if shares and inputs[0][0] == "op" else None
        for i, o in enumerate(outs):
            if isinstance(o, Tensor):
                self.owner[(k, i)] = base if shares else (k, i)
                ref = weakref.ref(o._data)
                self.made[id(o._data)] = (k, i, ref, o._version, o._version.value)
                self.by_key[(k, i)] = (ref, o._version, o._version.value)
        pending, self.pending = self.pending, []
        for slot in pending:
            self.settle(slot, self.source(slot.tensor))
        return result

    # saved-tensor hooks -----------------------------------------------------------

    def pack(self, t: Tensor):
        slot = _Slot(t)
        slot.group = self.current
        src = self.source(t)
        if src is None and self.current >= 0:
            self.pending.append(slot)
        else:
            self.settle(slot, src)
        return slot

    def settle(self, slot, src) -> None:
        """Decide what to do with a save, now that its source (k, i) (or None) is known."""
        slot.key = src


# ---------------------------------------------------------------------------
# the plan

class BudgetPlan:
    """Which saved activations a memory budget drops; ``run(fn, *args)`` applies it.

    Figures are bytes of saved activations (parameters and inputs live anyway):
    ``plain_bytes`` without a plan, ``kept_bytes`` with it, ``reserve_bytes`` the
    working memory of the largest recomputation, ``recompute_us`` the estimated
    recompute time per backward.  After a run, ``peak_bytes`` is the measured peak of
    live saved activations (kept + recomputed) during that forward and backward.
    """

    def __init__(self, budget_bytes, ops, saved, uses, groups, dropped, plain_bytes,
                 kept_bytes, reserve_bytes, recompute_ns, feasible):
        self.budget_bytes = int(budget_bytes)
        self._ops = ops
        self._saved = saved            # (k, i) -> bytes, saved activations
        self._uses = uses
        self._groups = groups
        self.dropped = frozenset(dropped)
        self.plain_bytes = plain_bytes
        self.kept_bytes = kept_bytes
        self.reserve_bytes = reserve_bytes
        self.recompute_us = recompute_ns / 1000.0
        self.feasible = feasible
        self.last_run = None

    @property
    def peak_bytes(self) -> int:
        return 0 if self.last_run is None else self.last_run.peak

    def run(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` with the dropped activations recomputed in backward."""
        run = _BudgetRun(self)
        self.last_run = run.stats  # (not the run itself: it holds the plan)
        run.install()
        try:
            with saved_tensors_hooks(run.pack, run.unpack):
                return fn(*args, **kwargs)
        finally:
            run.uninstall()

    __call__ = run

    def summary(self) -> str:
        lines = [f"memory budget {format_memory(self.budget_bytes)}: "
                 f"{len(self.dropped)} of {len(self._saved)} saved activations dropped",
                 f"  saved activations: plain {format_memory(self.plain_bytes)}, kept "
                 f"{format_memory(self.kept_bytes)} + recompute working memory "
                 f"{format_memory(self.reserve_bytes)}",
                 f"  estimated recompute time per backward: {self.recompute_us:.1f} us"]
        if not self.feasible:
            lines.append("  WARNING: the budget cannot be met by dropping activations; "
                         "everything droppable is dropped")
        if self.dropped:
            lines.append(f"  {'op':>5}  {'name':<24} {'shape':<20} {'bytes':>10}  uses")
            for k, i in sorted(self.dropped):
                op = self._ops[k]
                lines.append(f"  {k:>5}  {op_name(op.cls):<24} {str(list(op.out_shapes[i])):<20}"
                             f" {format_memory(self._saved[(k, i)]):>10}  {self._uses[(k, i)]}")
        if self.last_run is not None:
            lines.append(f"  measured peak of live saved activations (last run): "
                         f"{format_memory(self.last_run.peak)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    __repr__ = __str__


def _costs(ops, owners, saved, dropped) -> dict:
    """(recompute ns, peak working bytes) of producing each op output from what is kept.

    Ops are in execution order, so one pass in that order sees every input first.
    """
    table = {}
    for k, op in enumerate(ops):
        cost, held, peak = op.cost_ns, 0, 0
        for kind, ref in op.inputs:
            if kind != "op":
                continue
            owner = owners.get(ref)
            if owner is None or (owner in saved and owner not in dropped):
                continue  # at hand in backward: kept, or memory from outside
            c, w = table[ref]
            cost += c
            peak = max(peak, held + w)
            held += ops[ref[0]].out_bytes[ref[1]]
        work = max(peak, held + sum(op.out_bytes))
        for i in range(len(op.out_bytes)):
            table[(k, i)] = (cost, work)
    return table


def _reserve(groups, dropped, table, saved, uses) -> int:
    """Working memory of the worst backward node (its dropped saves recomputed at once),
    plus one recomputed value held for a later node that saved it too."""
    worst = max([sum(table[key][1] for key in keys if key in dropped) for keys in groups] + [0])
    held = max([saved[key] for key in dropped if uses[key] > 1] + [0])
    return worst + held


def _total(table, dropped) -> int:
    return sum(table[key][0] for key in dropped)


# Above this many (candidates x ops), the greedy step scores a tensor by its own recompute
# cost instead of the exact change in total recompute time (quadratic in model size).
_EXACT_LIMIT = 2_000_000


def _plan(budget_bytes, ops, owners, saved, uses, groups) -> BudgetPlan:
    """Greedy choice of the activations to drop: while the kept bytes plus the working
    memory of the worst recomputation exceed the budget, drop the droppable activation
    with the most bytes per nanosecond of recompute time it adds (its own op and the
    dropped inputs behind it, plus what it adds to activations already dropped)."""
    dropped: set = set()
    candidates = [key for key in saved
                  if not (ops[key[0]].random or ops[key[0]].cls._inplace
                          or ops[key[0]].cls._is_view)]
    exact = len(candidates) * len(ops) <= _EXACT_LIMIT
    kept = plain = sum(saved.values())
    feasible = True
    table = _costs(ops, owners, saved, dropped)
    while kept + _reserve(groups, dropped, table, saved, uses) > budget_bytes:
        base = _total(table, dropped)
        best, best_score = None, -1.0
        for key in candidates:
            if key in dropped:
                continue
            if exact:
                trial = dropped | {key}
                added = _total(_costs(ops, owners, saved, trial), trial) - base
            else:
                added = table[key][0]
            score = saved[key] / max(added, 1)
            if score > best_score:
                best, best_score = key, score
        if best is None:
            feasible = False
            break
        dropped.add(best)
        kept -= saved[best]
        table = _costs(ops, owners, saved, dropped)
    recompute_ns = _total(table, dropped)
    return BudgetPlan(budget_bytes, ops, saved, uses, groups, dropped, plain, kept,
                      _reserve(groups, dropped, table, saved, uses), recompute_ns, feasible)


def _trace(fn, args, kwargs) -> _Tracer:
    tracer = _Tracer()
    with _random.fork_rng(), enable_grad():
        tracer.install()
        try:
            with saved_tensors_hooks(tracer.pack, _Slot.unpack_kept):
                out = fn(*args, **kwargs)
        finally:
            tracer.uninstall()
    del out
    return tracer


def plan_memory_budget(fn, *args, budget_bytes: int, trace_runs: int = 2,
                       **kwargs) -> BudgetPlan:
    """Run ``fn(*args, **kwargs)`` `trace_runs` times (graphs discarded, random state
    restored; each op's cost is its fastest run) to see what it saves for backward, and
    plan which activations to drop to stay within `budget_bytes`.  Returns the
    `BudgetPlan`; apply it with ``plan.run(fn, *args)``."""
    tracer = _trace(fn, args, kwargs)
    for _ in range(max(trace_runs, 1) - 1):
        again = _trace(fn, args, kwargs)
        if [op.cls for op in again.ops] != [op.cls for op in tracer.ops]:
            raise RuntimeError("plan_memory_budget: the function ran different ops on two "
                               "runs; a memory plan needs the same ops every time")
        for op, other in zip(tracer.ops, again.ops):
            op.cost_ns = min(op.cost_ns, other.cost_ns)
    ops, saved, uses, groups = tracer.ops, tracer.saved, tracer.uses, tracer.groups
    for op in ops:  # keep only what a plan needs: the recipes of the real run replace these
        op.inputs = tuple((kind, ref) if kind != "ext" else (kind, None)
                          for kind, ref in op.inputs)
        op.params = None
    return _plan(budget_bytes, ops, tracer.owner, saved, uses,
                 [tuple(g) for g in groups.values()])


class MemoryBudget:
    """Run functions within a memory budget for saved activations: plans on the first call
    (one extra forward), then reuses the plan.  ``budget.plan`` shows the choice.

    >>> budget = MemoryBudget(64 * 2**20)
    >>> loss = budget(model, x).sum(); loss.backward()
    """

    def __init__(self, budget_bytes: int):
        self.budget_bytes = int(budget_bytes)
        self.plan = None

    def __call__(self, fn, *args, **kwargs):
        if self.plan is None:
            self.plan = plan_memory_budget(fn, *args, budget_bytes=self.budget_bytes, **kwargs)
        return self.plan.run(fn, *args, **kwargs)


# ---------------------------------------------------------------------------
# applying a plan

class _Slot:
    """What the graph holds for a saved tensor: the tensor, or (dropped) only its key."""

    __slots__ = ("tensor", "key", "group")

    def __init__(self, tensor):
        self.tensor = tensor
        self.key = None
        self.group = -1

    @staticmethod
    def unpack_kept(slot):
        return slot.tensor


class _Tracer(_Recipes):
    """The planning run: which activations (by owner) are saved, how often, by which op."""

    def __init__(self):
        super().__init__(tracing=True)
        self.saved: dict = {}
        self.uses: dict = {}
        self.groups: dict = {}

    def settle(self, slot, src) -> None:
        slot.key = src
        owner = None if src is None else self.owner.get(src)
        if owner is not None:  # an activation (not memory from outside the function)
            k, i = owner
            self.saved[owner] = self.ops[k].out_bytes[i]
            self.uses[owner] = self.uses.get(owner, 0) + 1
            self.groups.setdefault(slot.group, set()).add(owner)


class _Stats:
    """Bytes of live saved activations during one run, and their peak."""

    __slots__ = ("live", "peak")

    def __init__(self):
        self.live = 0
        self.peak = 0


def _untrack(counted: set, stats: _Stats, key, nbytes) -> None:
    counted.discard(key)
    stats.live -= nbytes


class _BudgetRun(_Recipes):
    """One run under a plan: keeps or drops saved tensors, recomputes on unpack, and
    counts the bytes of live saved activations."""

    def __init__(self, plan: BudgetPlan):
        super().__init__(tracing=False)
        self.plan = plan
        self.stats = _Stats()
        self.mismatch = False
        self._counted: set = set()
        self.remaining: dict = {}  # dropped key -> saves of it not unpacked yet
        self.memo: dict = {}       # dropped key -> its recomputed array, while still needed

    def op(self, cls, args, params):
        k = len(self.ops)
        traced = self.plan._ops
        if not self.mismatch and (k >= len(traced) or traced[k].cls is not cls):
            self.mismatch = True
            warnings.warn("memory budget: the function ran different ops than when it was "
                          "planned; from here on everything is kept (plan again)",
                          RuntimeWarning, stacklevel=3)
        return super().op(cls, args, params)

    # accounting ---------------------------------------------------------------

    def _track(self, array) -> None:
        key = id(array)
        if key in self._counted:
            return
        self._counted.add(key)
        stats = self.stats
        stats.live += array.nbytes
        stats.peak = max(stats.peak, stats.live)
        weakref.finalize(array, _untrack, self._counted, stats, key, array.nbytes)

    # hooks --------------------------------------------------------------------

    def settle(self, slot, src) -> None:
        slot.key = src
        owner = None if src is None else self.owner.get(src)
        if owner is None:
            return  # a parameter, an input, or changed in place: kept, not an activation
        if owner in self.plan.dropped and not self.mismatch:
            slot.tensor = None  # dropped: recomputed from its key when unpacked
            self.remaining[src] = self.remaining.get(src, 0) + 1
            return
        base = slot.tensor._data
        while getattr(base, "base", None) is not None:
            base = base.base
        self._track(base)

    def unpack(self, slot):
        if slot.tensor is not None:
            return slot.tensor
        key = slot.key
        array = self.memo.pop(key, None)
        if array is None:
            array = self.value(key)
        # NOTE: a value saved by several nodes is recomputed once and held until the last
        # of them has unpacked it (usually the next node: the op's own backward).
        left = self.remaining.get(key, 0) - 1
        self.remaining[key] = left
        if left > 0:
            self.memo[key] = array
        return _make(array)

    def value(self, key):
        """The array of output i of op k: still alive and unchanged, or recomputed."""
        k, i = key
        ref, counter, version = self.by_key[key]
        array = ref()
        if array is not None and counter.value == version:
            return array
        op = self.ops[k]
        arrays = []
        for kind, ref in op.inputs:
            if kind == "op":
                arrays.append(self.value(ref))
            elif kind == "ext":
                tensor, version = ref
                if tensor._version.value != version:
                    raise RuntimeError(
                        f"memory budget: an input of {op.cls.__name__} was modified in place "
                        "after the forward pass, so a dropped activation cannot be recomputed")
                arrays.append(tensor._data)
            else:
                arrays.append(ref)
        ctx = object.__new__(op.cls)
        ctx._to_save = None
        result = op.cls.forward(ctx, *arrays, **op.params)
        array = as_array(result[i] if isinstance(result, tuple) else result)
        self._track(array)
        return array
