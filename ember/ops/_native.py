"""Native CPU kernels through numba, with ember's NumPy code as the fallback.

A kernel is a plain Python function over NumPy arrays and numbers, decorated with
`@kernel` (or `@kernel(parallel=True)` for loops written with `prange`, which then run
on every thread `ember.set_num_threads` allows).  numba compiles it to machine code the
first time it is called with a given set of argument types, and caches the result on
disk (`cache=True`), so a later process loads it instead of compiling again (under a
name that changes when a helper kernel it inlines changes: `_helpers_digest`), from a
folder per user that every copy of the same ember code shares (`_native_cache`).

The op that owns a kernel decides, per call, whether to use it:

    if native.enabled() and native.is_cpu_array(x):
        gelu_kernel(x, out)          # inside it: for i in native.prange(n): ...
    else:
        ...the NumPy formulas...

`enabled()` is False when numba is not installed, when the environment sets
`EMBER_NO_NUMBA=1`, or inside `with use_numba(False):` (the tests run both paths this
way).  numba itself is imported on the first call of `enabled()` that could say True, not
when ember is imported, so `import ember` does not pay for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import types

import numpy as np

_ENV_OFF = os.environ.get("EMBER_NO_NUMBA", "").strip() not in ("", "0")

# None until numba has been looked for; then the numba module, or False if it is missing.
_numba = None
_local = threading.local()


def _load_numba():
    global _numba
    if _numba is None:
        try:
            import numba
        except ImportError:
            _numba = False
        else:
            _numba = numba
            from . import _native_cache
            _native_cache.install(numba)  # (builds kept per user, shared by every copy)
            if "NUMBA_THREADING_LAYER" not in os.environ:
                # NOTE: numba's own thread pool, not OpenMP's.  numba's default picks the
                # system libgomp, whose threads spin after each parallel loop; when the
                # process also holds another libgomp user (PyTorch, in benchmarks and
                # parity tests) they kept both cores busy: a CNN step took 128 ms instead
                # of 58, the numba-free MLP step 116 ms instead of 3.  GNU OpenMP is also
                # not safe to use in a forked child (DataLoader workers) once the parent
                # used it; workqueue is.  It is not safe for two threads launching at
                # once, so parallel kernels take `_launch_lock`.
                numba.config.THREADING_LAYER = "workqueue"
            _set_parallel_min(numba.config.NUMBA_NUM_THREADS)
    return _numba


# One parallel kernel at a time: workqueue aborts the process on concurrent launches.
_launch_lock = threading.Lock()
# Held while a kernel compiles the signatures left from its first call (`Kernel.__call__`):
# two threads that meet a new dtype at once (a product's parts on ember's threads) would
# otherwise both compile, one of them into a dispatcher the other has just closed
# ("compilation disabled").
_pending_lock = threading.RLock()


def available() -> bool:
    """True when numba is installed and not switched off by ``EMBER_NO_NUMBA``."""
    return not _ENV_OFF and _load_numba() is not False


def enabled() -> bool:
    """True when ops should run their numba kernels now (see `use_numba`)."""
    override = getattr(_local, "override", None)
    if override is not None:
        return override and available()
    return available()


@contextlib.contextmanager
def use_numba(flag: bool):
    """Within the block, turn the numba kernels on (if available) or off, in this thread."""
    previous = getattr(_local, "override", None)
    _local.override = bool(flag)
    try:
        yield
    finally:
        _local.override = previous


def is_cpu_array(*arrays) -> bool:
    """True when every argument is a NumPy array (not a CuPy one), i.e. a kernel can take it."""
    return all(type(a) is np.ndarray for a in arrays)


def writable(a):
    """`a`, or a copy of it where it is read-only: numba types a read-only array apart from
    a writable one, so passing one would compile a second build of a kernel."""
    return a if a.flags.writeable else a.copy()


def flat(a):
    """`a` as a C-contiguous, writable 1-D array (see `writable`), for elementwise kernels."""
    return writable(np.ascontiguousarray(a).reshape(-1))


def set_num_threads(num: int) -> None:
    """Let parallel kernels use `num` threads (called by `ember.set_num_threads`)."""
    numba = _load_numba() if not _ENV_OFF else False
    if numba:
        numba.set_num_threads(min(num, numba.config.NUMBA_NUM_THREADS))
        _set_parallel_min(numba.get_num_threads())


def kernel(fn=None, *, parallel: bool = False, fastmath: bool | set = False,
           inline: bool = False, signatures=None):
    """Decorator: compile a plain Python function with numba on its first call.

    ``@kernel`` gives a serial kernel; ``@kernel(parallel=True)`` one whose
    ``native.prange`` loops run on several threads.  ``@kernel(inline=True)`` marks a
    small helper (an exp, a sigmoid) that numba copies into each kernel calling it: LLVM
    does not inline calls across numba's compiled functions, and a loop with a call in
    it is not vectorized (measured 6x slower).  The undecorated function stays
    reachable as ``.py_func`` (to step through in a debugger).  Calling a kernel when
    numba is unavailable raises RuntimeError: callers check `enabled()` first.  A kernel
    may call another kernel of its module by name.  ``signatures``, a function of the
    numba module giving a list of signatures, fixes the builds: arrays of any layout then
    share one build instead of one per layout.  The first signature is compiled at the
    first call, the others at the first call that it does not fit (a float32 program
    never builds the float64 signatures: ~0.2-0.4 s each from a cold cache).
    """
    if fn is None:
        return lambda f: Kernel(f, parallel=parallel, fastmath=fastmath, inline=inline,
                                signatures=signatures)
    return Kernel(fn, parallel=parallel, fastmath=fastmath, inline=inline,
                  signatures=signatures)


class Kernel:
    """A function compiled by numba on its first call (made by `kernel`)."""

    def __init__(self, fn, *, parallel: bool, fastmath: bool | set, inline: bool = False,
                 signatures=None):
        self.py_func = fn
        self.parallel = parallel
        self.fastmath = fastmath
        self.inline = inline
        self.signatures = signatures
        self._compiled = None
        self._serial = None
        self._pending = ()   # signatures not compiled yet (see `kernel`)
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args):
        compiled = self._compiled
        if compiled is None:
            with _pending_lock:  # (one build, whichever thread calls first)
                compiled = self._compiled if self._compiled is not None else self._compile()
        if self.parallel:
            with _launch_lock:
                return compiled(*args)
        if not self._pending:
            return compiled(*args)
        with _pending_lock:  # (while builds are pending: see `_pending_lock`)
            if self._pending:
                try:
                    return compiled(*args)
                except TypeError:   # (numba: no build fits, and it may compile none)
                    self._compile_pending()
        return compiled(*args)

    def _compile_pending(self) -> None:
        """Compile the signatures left from the first call, and first those of the kernels
        this one calls (its new builds call theirs).  One thread at a time; `_pending`
        empties only once they are all built, so that no other thread calls the closed
        dispatcher for a signature not built yet."""
        with _pending_lock:
            for callee in _kernels_named(self.py_func).values():
                if callee._pending:
                    callee._compile_pending()
            if not self._pending:  # (another thread built them while this one waited)
                return
            self._compiled.disable_compile(False)
            try:
                for signature in self._pending:
                    self._compiled.compile(signature)
            finally:
                self._compiled.disable_compile()
            self._pending = ()

    def has_run(self) -> bool:
        """Whether either build (threaded or serial) has been compiled, i.e. called."""
        return self._compiled is not None or self._serial is not None

    def serial(self, *args):
        """The kernel run on the calling thread alone: a parallel kernel compiled a second
        time without threads (its ``prange`` loops become plain loops).

        NOTE: launching a parallel kernel costs ~40 us even on one thread (numba's
        workqueue hands the loop to its pool and waits), eight times what the serial
        build's call costs: small inputs take this one (see `run`).
        """
        if not self.parallel:
            return self(*args)
        compiled = self._serial
        if compiled is None:
            compiled = self._serial = self._compile(parallel=False)
        return compiled(*args)

    def _compile(self, parallel: bool | None = None):
        """The numba build of the kernel: threaded as declared, or with ``parallel=False``
        its serial build (which `serial` keeps; the declared one goes to `_compiled`)."""
        if not available():
            raise RuntimeError(
                f"the native kernel {self.py_func.__name__} needs numba "
                "(pip install numba, and EMBER_NO_NUMBA unset); callers take the NumPy path "
                "when native.enabled() is False")
        serial = parallel is False and self.parallel
        fn = _with_kernels_compiled(self.py_func)
        # numba's disk cache files are named after the function: the serial build gets a
        # name of its own, and every build the digest of the kernels it inlines (see
        # `_helpers_digest`)
        digest = _helpers_digest(self.py_func)
        suffix = ("_serial" if serial else "") + (f"_{digest}" if digest else "")
        if suffix:
            fn = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix,
                                    fn.__defaults__, fn.__closure__)
            fn.__qualname__ = self.py_func.__qualname__ + suffix
        # NOTE: error_model="numpy": a float division by zero gives inf/nan as in NumPy;
        # numba's default ("python") raises ZeroDivisionError and, by checking every
        # division, keeps loops with a division from being vectorized (~10x slower).
        options = dict(cache=True, nogil=True, parallel=self.parallel and not serial,
                       fastmath=self.fastmath, error_model="numpy",
                       inline="always" if self.inline else "never")
        if self.signatures is not None:
            first, *self._pending = self.signatures(_numba)
            compiled = _numba.njit(**options)(fn)
            compiled.compile(first)
            compiled.disable_compile()   # (other layouts convert to the signature's)
        else:
            compiled = _numba.njit(**options)(fn)
        if not serial:
            self._compiled = compiled
        return compiled


# Below this many elements, `run` keeps a parallel kernel on the calling thread.  A
# launch of numba's workqueue measured 40-160 us on the 2-core test machines (it wakes
# every worker and waits for the last; 40 us right after an OpenBLAS product, 150 us in a
# loop of launches), while a second thread can at most halve a kernel.  With two threads
# the training steps ran fastest when only arrays of millions of elements went parallel:
# `python benchmarks/run.py --only mlp,gpt,lstm,cnn --rounds 3` (Intel host, 2026-12-02)
# with 2M instead of 64K: MLP step 2.93-3.09 -> 2.71-2.74 ms, GPT 72.2-73.1 -> 69.9-70.2
# ms, LSTM and CNN unchanged (GELU on 1M floats right after a product: 1.41 ms serial,
# 1.50-1.55 ms on two threads).  More threads divide the work further, so there the
# threshold stays at the 64K measured before for launch against serial time.
PARALLEL_MIN_TWO_THREADS = 1 << 21
PARALLEL_MIN_MORE_THREADS = 1 << 16
PARALLEL_MIN = PARALLEL_MIN_TWO_THREADS


def _set_parallel_min(threads: int) -> None:
    global PARALLEL_MIN
    PARALLEL_MIN = PARALLEL_MIN_TWO_THREADS if threads <= 2 else PARALLEL_MIN_MORE_THREADS


# From this many elements of work, on two threads, a kernel whose call says how to `cut`
# it runs as parts on ember's own threads (ops/_workers.py) rather than through numba's
# workqueue: a part reaches the worker in ~40 us (it waits for the GIL, which the
# caller's part lets go of once inside its nogil build), a workqueue launch in 40-160 us.
# (Only two threads were measured: with many, each worker would wait its turn for the
# GIL, and numba's pool, which starts them all at once, keeps the work.)
SPLIT_MIN = 1 << 18
# A worker starts its share 40-46 us after the caller (measured on 2 threads: it waits,
# asleep, for the GIL): the caller's share is larger by this many elements of work
LEAD = 1 << 15


def shares(items: int, size: int, threads: int) -> list:
    """`items` cut into `threads` contiguous slices, the first (the caller's) larger by
    `LEAD` elements' worth."""
    lead = min(items * LEAD // max(size, 1), items // threads)
    rest = _parallel_module().split(items - lead, threads)
    return [slice(0, rest[0].stop + lead)] + [slice(r.start + lead, r.stop + lead)
                                               for r in rest[1:]]


def cuts(size: int) -> bool:
    """Whether work of `size` elements is cut over the threads (`run` with a `cut`, the
    fused optimizer steps): from `SPLIT_MIN` elements, on exactly two threads."""
    if size < SPLIT_MIN:
        return False
    return _parallel_module().threads() == 2


# ops/_parallel.py and ops/_native_cuts.py, imported on first use (the first imports this
# module; the second numba's extension API) and kept: a function-level ``from . import``
# costs ~1 us a call, and `run` made three on every cut kernel.
_lazy: dict = {}


def _parallel_module():
    module = _lazy.get("parallel")
    if module is None:
        from . import _parallel

        module = _lazy["parallel"] = _parallel
    return module


def _cuts_module():
    module = _lazy.get("cuts")
    if module is None:
        from . import _native_cuts

        module = _lazy["cuts"] = _native_cuts
    return module


def run(kernel: Kernel, size: int, *args, cut: tuple = (), part: str | None = None):
    """``kernel(*args)``, on every allowed thread when `size` (elements of work) reaches
    `PARALLEL_MIN`, else its serial build on this thread alone.

    `cut` names the arguments (by position) that the work divides along: arrays whose
    first dimension indexes independent items (the elements of a flat activation, the
    rows of a softmax).  With it, from `SPLIT_MIN` elements on two threads, the serial
    build runs once per thread on each one's share of those arrays, the other arguments
    passed whole.  `part` names the kernel's family of arguments in ops/_native_cuts.py:
    the worker's share then runs as a native part, without waiting for the GIL (360-392
    against 423-540 us for that GELU); without it, or when that cannot run, as a
    Python part.  On numba's threads (from `PARALLEL_MIN`, where the work is not cut on
    ember's), a kernel with a `part` also runs its serial build, once per thread through
    that family's entry point (`_native_cuts.run_threaded`), so that its own threaded
    build is never compiled.

    NOTE: exact GELU forward on 1M float32 elements (GPT's MLP, 2 threads) took 628 us
    serial and 364-419 us cut in two (PyTorch: 252 us); forward and backward 1.82 ms and
    1.16-1.25 ms.  The GPT step went from 53.0 to 52.2 ms (median of 8 alternated
    blocks).  numba's workqueue on two threads was no faster than serial at this size.
    """
    if cut and cuts(size):
        if part is not None and _cuts_module().run_cut(kernel, part, args, cut):
            return None
        serial = kernel.serial

        def run_share(share):
            return serial(*[a[share] if i in cut else a for i, a in enumerate(args)])

        _parallel_module().run_parts(run_share, shares(args[cut[0]].shape[0], size, 2))
        return None
    if size >= PARALLEL_MIN:
        if part is not None and _cuts_module().run_threaded(kernel, part, args, cut,
                                                            _numba.get_num_threads()):
            return None
        return kernel(*args)
    return kernel.serial(*args)


def _helpers_digest(fn) -> str:
    """A short digest of the kernels `fn` calls, followed through their own calls: their
    code and the numbers they read from their modules ('' when it calls none).

    numba checks a cached build only against the file that defines the function, while
    the helpers it inlines may live in another file (`_exp32`, used by the row and LSTM
    kernels): an edited helper would leave those kernels running their old machine code.
    The digest goes into the build's name, so an edit gives a new cache entry.  numba
    intrinsics it calls (ops/_native_vectors.py's) count by their module's whole source,
    where the code they generate is written.
    """
    parts, seen, stack = [], set(), [fn]
    while stack:
        code_of = stack.pop()
        for name in code_of.__code__.co_names:
            value = code_of.__globals__.get(name)
            if isinstance(value, (int, float, np.generic)) and not isinstance(value, bool):
                parts.append(f"{code_of.__module__}.{name}={value!r}")
            elif isinstance(value, Kernel) and value.py_func is not None \
                    and id(value) not in seen:
                seen.add(id(value))
                parts.append(f"{value.py_func.__qualname__}:{_code_text(value.py_func)}")
                stack.append(value.py_func)
            elif _is_intrinsic(value) and id(value) not in seen:
                seen.add(id(value))
                parts.append(f"{name}:{_module_source(value._defn.__module__)}")
    if not seen:
        return ""
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:10]


def _is_intrinsic(value) -> bool:
    """Whether `value` is a numba intrinsic (only where numba is loaded)."""
    if not _numba:
        return False
    from numba.core.extending import _Intrinsic

    return isinstance(value, _Intrinsic)


_sources: dict = {}


def _module_source(module: str) -> str:
    """The source text of the imported module named `module` (kept once read)."""
    text = _sources.get(module)
    if text is None:
        import sys

        with open(sys.modules[module].__file__, encoding="utf-8") as file:
            text = _sources[module] = file.read()
    return text


def _code_text(fn) -> str:
    """`fn`'s bytecode and constants, as text to digest."""
    code = fn.__code__
    consts = [c.co_code.hex() if isinstance(c, types.CodeType) else repr(c)
              for c in code.co_consts]
    return f"{code.co_code.hex()}:{consts}"


def kernel_digest(kernel) -> str:
    """A short digest of `kernel`'s own code (a Kernel, or a plain function compiled
    another way) and of the kernels it calls, for the name of a build that inlines them
    but is cached under another file's name (a cut's C entry point, ops/_native_cuts.py;
    ops/_native_winograd_lone.py's): an edited kernel then gets a new cache entry."""
    fn = kernel.py_func if isinstance(kernel, Kernel) else kernel
    text = _code_text(fn) + _helpers_digest(fn)
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def _kernels_named(fn) -> dict:
    """The kernels that `fn` names, by name."""
    return {name: value for name, value in fn.__globals__.items()
            if name in fn.__code__.co_names and isinstance(value, Kernel)}


def _with_kernels_compiled(fn):
    """`fn`, seeing the numba-compiled form of each kernel it names (so kernels call kernels)."""
    named = _kernels_named(fn)
    if not named:
        return fn
    scope = dict(fn.__globals__)
    scope.update((name, k._compiled or k._compile()) for name, k in named.items())
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def __getattr__(name: str):
    # `native.prange` inside a kernel: numba looks the attribute up when it compiles, so
    # numba is imported then, not when this module is.
    if name == "prange":
        numba = _load_numba()
        return numba.prange if numba else range
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
