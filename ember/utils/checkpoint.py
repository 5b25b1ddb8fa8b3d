"""Activation checkpointing: trade compute for memory by recomputing in backward.

``checkpoint(fn, *args)`` runs `fn` without keeping the tensors its ops save for
backward; when backward needs them, `fn` is run again on the same inputs (with the
random generators' state of the first run, so dropout draws the same masks) and
the gradients are those of the plain run, to the bit.

Two variants, as in PyTorch:

* ``use_reentrant=True``: `fn` runs under no-grad inside one ``autograd.Function``;
  its backward re-runs `fn` with grad on and calls the engine on that small graph.
  Gradients reach only tensors that flow in through `args` (and parameters used
  inside `fn`) when at least one input requires grad.
* ``use_reentrant=False`` (recommended): `fn` runs with the graph recorded, but every
  tensor saved inside it is replaced by a small key (``saved_tensors_hooks``).  The
  first time backward unpacks one, `fn` is re-run under hooks that collect the saved
  tensors again, in the same order.  Supports selective checkpointing
  (``context_fn=partial(create_selective_checkpoint_contexts, policy)``), kwargs,
  ``autograd.grad`` and nesting.

The frame of one non-reentrant call keys each saved tensor by (op number within
`fn`, save number within that op), so that an op whose outputs selective
checkpointing cached can be skipped in the recomputation.
"""

from __future__ import annotations

import contextlib
import warnings

from .. import random as _random
from .._core.engine import backward as _engine_backward
from .._core.grad_mode import STATE, enable_grad
from .._core.tensor import Tensor, _make
from ..ops._observer import Observer, run_op
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from ..autograd.selective_checkpoint import (
    CheckpointPolicy, SelectiveCheckpointContext, _PolicyContext,
    create_selective_checkpoint_contexts,
)

__all__ = ["CheckpointError", "CheckpointFunction", "CheckpointPolicy",
           "SelectiveCheckpointContext", "checkpoint", "checkpoint_sequential",
           "create_selective_checkpoint_contexts", "detach_variable", "noop_context_fn",
           "set_checkpoint_early_stop"]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce what the first run saved."""


def noop_context_fn():
    """The default ``context_fn``: no extra context in forward or in the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted for compatibility: ember always recomputes the whole function."""
    yield


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies of the tensors in `inputs`, keeping their requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x
                 for x in inputs)


# ---------------------------------------------------------------------------
# random state

def _rng_states():
    cuda = {i: g.get_state() for i, g in _random._cuda_generators.items()}
    return _random.get_rng_state(), cuda


@contextlib.contextmanager
def _replayed_rng(states, enabled: bool):
    """Run with the generators as they were in `states`, restoring the current ones after."""
    if not enabled:
        yield
        return
    cpu, cuda = states
    with _random.fork_rng(devices=list(cuda)):
        _random.set_rng_state(cpu)
        for i, state in cuda.items():
            _random.default_cuda_generator(i).set_state(state)
        yield


# ---------------------------------------------------------------------------
# the reentrant variant

class CheckpointFunction(Function):
    """``forward`` runs the function under no-grad; ``backward`` re-runs it with grad and
    back-propagates through that graph."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_states = _rng_states()
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _replayed_rng(getattr(ctx, "rng_states", None), ctx.preserve_rng_state):
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _engine_backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(t.grad if isinstance(t, Tensor) else None for t in detached)


def _checkpoint_reentrant(function, args, preserve_rng_state: bool):
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args) and STATE.enabled:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      UserWarning, stacklevel=3)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


# ---------------------------------------------------------------------------
# the non-reentrant variant

class _Frame:
    """One non-reentrant checkpoint call: what is needed to recompute, and the keys."""

    def __init__(self, fn, args, kwargs, preserve, determinism_check, debug, recompute_ctx):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.preserve = preserve
        self.rng_states = _rng_states() if preserve else None
        self.determinism_check = determinism_check
        self.debug = debug
        self.recompute_ctx = recompute_ctx
        self.policy = None          # selective checkpointing: fn(ctx, op, *args, **kw)
        self.allow_mutation = False
        self.op_index = -1          # number of the op now running
        self.pack_in_op = 0         # saves made since it started
        self.metas = {}             # key -> (shape, dtype) of what forward saved
        self.cache = {}             # op number -> (outputs, versions, per-save sources)
        self.saving = None          # the saves of a cached op while it runs
        self.recomputed = None      # key -> tensor, filled by a recomputation
        self.recomputing = False
        self.trace = [] if debug else None

    # keys ---------------------------------------------------------------------

    def _next_key(self) -> tuple:
        key = (self.op_index, self.pack_in_op)
        self.pack_in_op += 1
        return key

    def pack(self, tensor):
        key = self._next_key()
        self.metas[key] = (tuple(tensor._data.shape), tensor._data.dtype)
        if self.saving is not None:
            self.saving.append((key, tensor))
        return key

    def unpack(self, key):
        if self.recomputed is None or key not in self.recomputed:
            self.recompute()
        value = self.recomputed.pop(key, None)
        if value is None:
            raise CheckpointError(
                "torch.utils.checkpoint: the recomputation saved fewer tensors than the first "
                f"run (nothing for op #{key[0]}, save #{key[1]})." + self._trace_hint())
        return value

    def pack_recomputed(self, tensor):
        key = self._next_key()
        self.recomputed[key] = _make(tensor._data)
        return None

    # recomputation --------------------------------------------------------------

    def recompute(self) -> None:
        self.recomputed = {}
        self.recomputing = True
        self.op_index, self.pack_in_op = -1, 0
        forward_trace, self.trace = self.trace, ([] if self.debug else None)
        observer = _FrameObserver(self)
        try:
            with _replayed_rng(self.rng_states, self.preserve), enable_grad():
                observer.install()
                try:
                    with saved_tensors_hooks(self.pack_recomputed, _unpack_unused), \
                            self.recompute_ctx:
                        self.fn(*self.args, **self.kwargs)
                finally:
                    observer.uninstall()
        finally:
            self.recomputing = False
        self.cache = {}
        if self.determinism_check == "default":
            self._check(forward_trace)

    def _check(self, forward_trace) -> None:
        for key, (shape, dtype) in self.metas.items():
            got = self.recomputed.get(key)
            if got is None:
                continue  # reported when (if) it is unpacked
            if tuple(got._data.shape) != shape or got._data.dtype != dtype:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    "different metadata than during the forward pass.\n"
                    f"tensor at position {key}:\nsaved metadata: shape={list(shape)}, "
                    f"dtype={dtype}\nrecomputed metadata: shape={list(got._data.shape)}, "
                    f"dtype={got._data.dtype}" + self._trace_hint(forward_trace))

    def _trace_hint(self, forward_trace=None) -> str:
        if not self.debug:
            return (" Pass debug=True to checkpoint() to see the ops run in both passes; "
                    "check that the function is deterministic (no global state).")
        return (f"\nops in the first run: {forward_trace or []}\n"
                f"ops in the recomputation: {self.trace}")


def _unpack_unused(_):
    raise RuntimeError("checkpoint: a tensor saved during the recomputation was unpacked")


class _FrameObserver(Observer):
    """Numbers the ops of a checkpointed function; with a selective-checkpointing policy,
    caches the outputs of ops to save and skips them in the recomputation."""

    def __init__(self, frame: _Frame):
        self.frame = frame

    def op(self, cls, args, params):
        frame = self.frame
        frame.op_index += 1
        frame.pack_in_op = 0
        if frame.trace is not None:
            frame.trace.append(cls.__name__)
        if frame.policy is None:
            return run_op(self.prev, cls, args, params)
        k = frame.op_index
        if frame.recomputing:
            entry = frame.cache.get(k)
            if entry is None:
                return run_op(self.prev, cls, args, params)
            return _replay_cached(frame, cls, args, entry)
        ctx = SelectiveCheckpointContext(is_recompute=False)
        policy = frame.policy(ctx, cls, *args, **params)
        if policy not in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
            return run_op(self.prev, cls, args, params)
        frame.saving = []
        try:
            result = run_op(self.prev, cls, args, params)
        finally:
            saving, frame.saving = frame.saving, None
        outs = result if isinstance(result, tuple) else (result,)
        if cls._inplace or not all(isinstance(o, Tensor) for o in outs):
            return result  # an in-place op rewrites its input: recompute it instead
        sources = [_source_of(t, outs, args) for _, t in saving]
        frame.cache[k] = (tuple(o._data for o in outs), tuple(o._version for o in outs),
                          tuple(o._version.value for o in outs), sources,
                          isinstance(result, tuple))
        return result


def _source_of(t: Tensor, outs, args):
    """Where a save of a cached op comes from: one of its outputs, inputs, or (kept) itself."""
    for i, o in enumerate(outs):
        if t._data is o._data:
            return ("out", i)
    for m, a in enumerate(args):
        if isinstance(a, Tensor) and (t is a or t._data is a._data):
            return ("in", m)
    return ("keep", _make(t._data))


def _replay_cached(frame: _Frame, cls, args, entry):
    """In the recomputation: give the cached outputs instead of running the op, and the
    tensors it saved from them and from the recomputed inputs."""
    arrays, counters, versions, sources, multi = entry
    if not frame.allow_mutation:
        for c, v in zip(counters, versions):
            if c.value != v:
                raise RuntimeError(
                    f"{cls.__name__}: an output cached by selective checkpointing was modified "
                    "in place before backward; pass allow_cache_entry_mutation=True to "
                    "create_selective_checkpoint_contexts if that is intended")
    records = STATE.enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args)
    outs = tuple(_make(a, records and a.dtype.kind in "fc") for a in arrays)
    for j, (kind, what) in enumerate(sources):
        if kind == "out":
            value = _make(arrays[what])
        elif kind == "in":
            value = _make(args[what]._data)
        else:
            value = what
        frame.recomputed[(frame.op_index, j)] = value
    frame.pack_in_op = len(sources)
    return outs if multi else outs[0]


def _checkpoint_non_reentrant(function, args, kwargs, preserve_rng_state, context_fn,
                              determinism_check, debug):
    forward_ctx, recompute_ctx = context_fn()
    frame = _Frame(function, args, kwargs, preserve_rng_state, determinism_check, debug,
                   recompute_ctx)
    if isinstance(forward_ctx, _PolicyContext):
        frame.policy = forward_ctx.policy
        frame.allow_mutation = forward_ctx.allow_cache_entry_mutation
    observer = _FrameObserver(frame)
    observer.install()
    try:
        with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
            return function(*args, **kwargs)
    finally:
        observer.uninstall()


# ---------------------------------------------------------------------------
# public functions

_REENTRANT_WARNING = (
    "ember.utils.checkpoint: pass use_reentrant explicitly. As in PyTorch, leaving it out "
    "means use_reentrant=True today; use_reentrant=False is recommended (it supports "
    "keyword arguments, autograd.grad and selective checkpointing).")


def checkpoint(function, *args, use_reentrant: bool | None = None,
               context_fn=noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in
    backward.  Gradients equal those of the plain call (dropout too, through the saved
    random state; ``preserve_rng_state=False`` skips that).

    >>> y = checkpoint(block, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return _checkpoint_reentrant(function, args, preserve)
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    return _checkpoint_non_reentrant(function, args, kwargs, preserve, context_fn,
                                     determinism_check, debug)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run a sequence of modules/functions in `segments` chunks, checkpointing every chunk
    but the last (whose activations backward needs first anyway)."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if segments <= 0:
        raise ValueError(f"checkpoint_sequential: segments must be positive, got {segments}")
    size = len(functions) // segments
    if size == 0:
        raise ValueError(f"checkpoint_sequential: {segments} segments for "
                         f"{len(functions)} functions")

    def run(start: int, stop: int):
        def segment(x):
            for f in functions[start:stop]:
                x = f(x)
            return x
        return segment

    start = 0
    for _ in range(segments - 1):
        input = checkpoint(run(start, start + size), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
        start += size
    return run(start, len(functions))(input)
