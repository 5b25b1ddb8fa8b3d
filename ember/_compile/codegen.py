"""Generated numba kernels for fused chains of elementwise ops.

A fused chain is a small expression DAG: each member is one elementwise op (``Mul``,
``Tanh``, ...) whose arguments are leaves (tensors computed outside the chain, of the
output's shape or broadcast to it), Python numbers, or earlier members.
`ELEMENTWISE` is the one table this module reads: op class -> the scalar expression of
its forward and of the derivative of its output with respect to each argument, written
with ``{a}``/``{b}`` for the arguments and ``{y}`` for the output.

`ChainKernel` turns a chain into two kernels: a forward one that computes every member
for element ``i`` in registers and writes the last, and a backward one that recomputes
the members, runs the chain rule backwards through the derivative expressions and
writes one gradient per leaf.  The source is built once per
chain signature (`source` is the cache key) and compiled by numba on first use, in a
serial form and a parallel (``prange``) one for large arrays; the source is kept in a
file of `cache_dir` so that numba caches the machine code on disk for later processes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass

import numpy as np

from ..ops import _native as native
from ..ops import _parallel
from ..ops._native_cache import user_folder
from ..ops.activation import Gelu, Silu
from ..ops.arithmetic import Abs, Add, Div, Mul, Neg, Rsub, RsubScalar, Sub
from ..ops.elementwise import Cos, Exp, Log, Relu, Rsqrt, Sin, Sqrt, Tanh
from ..ops.elementwise_special import Sigmoid

_SIGMOID = "sigmoid({a})"
_INV_SQRT_2PI = 0.3989422804014327

# op class -> (forward expression, derivative of the output by each argument).  The
# functions (exp, tanh, sigmoid, ncdf: the normal CDF, ...) are those of `HEADERS`.
# NOTE: relu'(0) = 0 and a nan input passes the gradient, as the eager ReluBackward does.
ELEMENTWISE: dict = {
    Add: ("{a} + {b}", ("1.0", "1.0")),
    Sub: ("{a} - {b}", ("1.0", "-1.0")),
    Rsub: ("{a} - {b}", ("1.0", "-1.0")),
    RsubScalar: ("{a} - {b}", ("1.0", "-1.0")),
    Mul: ("{a} * {b}", ("{b}", "{a}")),
    Div: ("{a} / {b}", ("1.0 / {b}", "-{a} / ({b} * {b})")),
    Neg: ("-{a}", ("-1.0",)),
    Abs: ("abs({a})", ("(1.0 if {a} > 0 else (-1.0 if {a} < 0 else 0.0))",)),
    Relu: ("({a} if not {a} <= 0 else 0.0)", ("(0.0 if {y} <= 0 else 1.0)",)),
    Exp: ("exp({a})", ("{y}",)),
    Log: ("log({a})", ("1.0 / {a}",)),
    Sqrt: ("sqrt({a})", ("0.5 / {y}",)),
    Rsqrt: ("1.0 / sqrt({a})", ("-0.5 * {y} * {y} * {y}",)),
    Sin: ("sin({a})", ("cos({a})",)),
    Cos: ("cos({a})", ("-sin({a})",)),
    Tanh: ("tanh({a})", ("1.0 - {y} * {y}",)),
    Sigmoid: (_SIGMOID, ("{y} * (1.0 - {y})",)),
    Silu: ("{a} * " + _SIGMOID, (_SIGMOID + " * (1.0 + {a} * (1.0 - " + _SIGMOID + "))",)),
    Gelu: ("{a} * ncdf({a})",
           (f"ncdf({{a}}) + {{a}} * {_INV_SQRT_2PI} * exp(-0.5 * {{a}} * {{a}})",)),
}

# The first lines of a generated source, by dtype: where its functions come from.
# float32 kernels compute in float32 (numbers become f32(...)), so that LLVM fills whole
# vector registers, and take the vectorizable float32 helpers of `kernel_math`.
HEADERS = {
    "float64": ("import math\nfrom math import cos, exp, log, sin, sqrt, tanh\n\n"
                "from numba import prange\n\n"
                "from ember._compile.kernel_math import ncdf64 as ncdf\n"
                "from ember._compile.kernel_math import sigmoid64 as sigmoid\n"),
    "float32": ("import math\nfrom math import cos, log, sin, sqrt\n\n"
                "from numba import prange\nfrom numpy import float32 as f32\n\n"
                "from ember._compile.kernel_math import exp32 as exp\n"
                "from ember._compile.kernel_math import ncdf32 as ncdf\n"
                "from ember._compile.kernel_math import sigmoid32 as sigmoid\n"
                "from ember._compile.kernel_math import tanh32 as tanh\n"),
}


def operands(fn: type, args: tuple, params: dict) -> tuple | None:
    """The value arguments of an op call that `ELEMENTWISE` can stand for (the rest are
    options its entry assumes), or None when the options take it elsewhere."""
    arity = len(ELEMENTWISE[fn][1])
    options = {**dict(enumerate(args[arity:], arity)), **params}
    if fn is Gelu:  # Gelu(x, approximate, keep_cdf): the exact form only
        approximate = options.get(1, options.get("approximate", "none"))
        return args[:1] if getattr(approximate, "value", approximate) == "none" else None
    return args if not options else None


@dataclass(frozen=True)
class Member:
    """One op of a chain: its class and, per argument, ``("leaf", k)``, ``("member", m)``
    or ``("number", value)``."""

    fn: type
    args: tuple


class ChainKernel:
    """The forward and backward kernels of one chain (see the module docstring)."""

    PARALLEL_FROM = 1 << 16  # elements; below it a thread pool costs more than it saves

    def __init__(self, members: tuple, n_leaves: int, shapes: list | None = None,
                 dtype: str = "float64"):
        """`shapes`: None when every leaf has the output's shape (the kernels then run
        over flat arrays); else the output's shape followed by each leaf's."""
        self.members = members
        self.n_leaves = n_leaves
        self.ndim = None if shapes is None else len(shapes[0])
        self.dtype = dtype
        # per leaf, the leaf whose gradient it shares (itself where none): leaves of the
        # output's shape whose gradients are the same sum of terms (both sides of the
        # ``a + b`` in ``relu(a + b)``) get one array, written once, as eager add hands
        # its one gradient to both
        self.same = _same_gradients(members, n_leaves, shapes)
        self.source = _source(members, n_leaves, shapes, dtype, self.same)
        self._compiled: dict = {}

    def forward(self, out: np.ndarray, leaves: list) -> bool:
        """Write the chain's value for `leaves` into `out` (all flat, or `out` of the
        output's shape and each leaf C-contiguous of its own shape).  False when numba
        could not compile the kernel: the caller then runs the member ops."""
        return self._run("forward", out.size, (out, *leaves))

    def backward(self, grad: np.ndarray, leaves: list, grads: list) -> bool:
        """Write d(out)/d(leaf) * `grad` into each array of `grads` (`grad`'s shape);
        False as for `forward`."""
        return self._run("backward", grad.size, (grad, *leaves, *grads))

    broken = None  # why numba could not compile this chain's kernels, once it failed

    def _run(self, which: str, size: int, args: tuple) -> bool:
        if self.broken is not None:
            return False
        try:
            if self.ndim is None and native.cuts(size):
                # flat arrays on two threads: the serial build on each thread's share.
                # NOTE: numba's workqueue lost there: relu(a + b) on (64, 16, 32, 32)
                # float32, forward and backward, 3549 us compiled against 2153 eagerly
                # (2-core Intel Xeon, 2026-12-08); `native.PARALLEL_MIN` is why.
                serial = self._kernel(which, False)
                shares = native.shares(args[0].shape[0], size, 2)
                _parallel.run_parts(lambda share: serial(*[a[share] for a in args]), shares)
            else:
                # (numba's threads only where ember's own rule for them allows: native.run's)
                parallel = size >= max(self.PARALLEL_FROM, native.PARALLEL_MIN)
                self._kernel(which, parallel)(*args)
        except native._load_numba().core.errors.NumbaError as exc:
            self.broken = str(exc).splitlines()[0]
            warnings.warn(f"ember.compile: a fused chain runs op by op, numba could not "
                          f"compile it ({self.broken})", RuntimeWarning, stacklevel=2)
            return False
        return True

    def _kernel(self, which: str, parallel: bool):
        key = (which, parallel)
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._compiled[key] = _compile(self.source, which, parallel)
        return fn


_CACHE: dict = {}  # (source, which, parallel) -> compiled kernel, shared by equal chains
FASTMATH = {"contract"}


def _compile(source: str, which: str, parallel: bool):
    key = (source, which, parallel)
    fn = _CACHE.get(key)
    if fn is None:
        python_fn, on_disk = _load(source, which)
        if not parallel:
            # (numba's disk cache names a build after its function: the serial one gets a
            # name of its own, or a process could load the threaded build for it, whose
            # workqueue aborts when two of ember's threads call it at once)
            python_fn = types.FunctionType(python_fn.__code__, python_fn.__globals__,
                                           python_fn.__name__ + "_serial",
                                           python_fn.__defaults__, python_fn.__closure__)
            python_fn.__qualname__ = python_fn.__name__
        # error_model="numpy": a division by zero gives inf or nan, as NumPy does.
        # fastmath "contract" only (fused multiply-adds; nan and inf keep their meaning):
        # a gelu-then-tanh chain took 1.96 ms per 1M float32 elements without, 1.21 with.
        fn = _CACHE[key] = native._load_numba().njit(
            nogil=True, parallel=parallel, error_model="numpy", fastmath=FASTMATH,
            cache=on_disk)(python_fn)
    return fn


def cache_dir() -> str | None:
    """Where generated kernel sources (and numba's compiled forms of them) are kept:
    ``$EMBER_COMPILE_CACHE``, else ``~/.cache/ember/compile``; None without a home
    folder (the kernels are then compiled in memory, in every process)."""
    return user_folder("compile", "EMBER_COMPILE_CACHE")


def _load(source: str, which: str):
    """The Python function `which` of `source`, and whether it lives in a file.

    A kernel whose source is a file can be cached on disk by numba (``cache=True``), so a
    later process loads the machine code instead of compiling again; the file is named by
    a hash of the source.  Where the cache folder cannot be written, the source is run
    in memory and compiled in every process.
    """
    text = source
    # (named by the helpers' source too: the generated file only imports them, and numba
    # would keep running a cached kernel with the helpers' old code after an upgrade)
    name = "chain_" + hashlib.sha256((text + _helpers_source()).encode()).hexdigest()[:24]
    folder = cache_dir()
    try:
        if folder is None:
            raise OSError("no home folder for ember.compile's kernels")
        path = os.path.join(folder, name + ".py")
        if not os.path.exists(path):
            os.makedirs(folder, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)  # (atomic: another process may write the same file)
        module_name = f"ember_compiled_{name}"
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module  # (numba's disk cache looks the module up)
            spec.loader.exec_module(module)
        return getattr(module, which), True
    except OSError:
        scope: dict = {}
        exec(compile(text, f"<ember.compile {name}>", "exec"), scope)
        return scope[which], False


@functools.cache
def _helpers_source() -> str:
    """The source of the two modules whose scalar helpers generated kernels inline (read,
    not imported: importing kernel_math compiles them)."""
    from ..ops import _native_activation

    text = ""
    for path in (_native_activation.__file__,
                 os.path.join(os.path.dirname(__file__), "kernel_math.py")):
        with open(path, encoding="utf-8") as f:
            text += f.read()
    return text


def _gradient_terms(members: tuple, n_leaves: int) -> list:
    """Per leaf, the (member, derivative text) pairs through which its gradient comes, in
    the backward kernel's order: two leaves with the same pairs have the same gradient
    (the same derivatives of the same members, added in the same order)."""
    terms: list = [[] for _ in range(n_leaves)]
    for m in range(len(members) - 1, -1, -1):
        for position, (kind, ref) in enumerate(members[m].args):
            if kind == "leaf":
                terms[ref].append((m, ELEMENTWISE[members[m].fn][1][position]))
    return terms


def _same_gradients(members: tuple, n_leaves: int, shapes: list | None) -> list:
    """Per leaf, the first leaf of the output's shape with the same gradient terms
    (`_gradient_terms`, comparing each member's derivative text, which names its own
    arguments, so ``a + b`` matches and ``a - b`` does not), else the leaf itself."""
    terms = _gradient_terms(members, n_leaves)
    same = list(range(n_leaves))
    for k in range(n_leaves):
        if shapes is not None and shapes[1 + k] != shapes[0]:
            continue
        for j in range(k):
            if same[j] == j and terms[j] == terms[k] and terms[k] and (
                    shapes is None or shapes[1 + j] == shapes[0]):
                same[k] = j
                break
    return same


def _source(members: tuple, n_leaves: int, shapes: list | None, dtype: str,
            same: list) -> str:
    """Python source of ``forward(out, x0, ..)`` and ``backward(g, x0, .., gx0, ..)``:
    a loop over the elements (one loop over flat arrays, or one per dimension, the
    first parallel) whose body computes the chain in registers.

    A leaf of another shape than the output's is indexed by the output's indices of its
    own dimensions, and 0 where it has size 1 (``x1[i1]`` for a bias, ``x2[i0, 0]`` for
    a keepdim statistic): every array stays contiguous, which LLVM can vectorize.
    """
    typed = _float32_numbers if dtype == "float32" else (lambda text: text)
    leaves = [f"x{k}" for k in range(n_leaves)]
    ndim = None if shapes is None else len(shapes[0])
    dims = 1 if ndim is None else ndim
    at = "[i]" if ndim is None else "[" + ", ".join(f"i{d}" for d in range(dims)) + "]"
    leaf_at = [at] * n_leaves if shapes is None else [
        _index(shape, shapes[0]) for shape in shapes[1:]]
    pad = "    " * (1 + dims)

    def loops(first: str) -> list:
        if ndim is None:
            return [f"    for i in prange({first}.shape[0]):"]
        return [f"{'    ' * (d + 1)}for i{d} in {'prange' if d == 0 else 'range'}"
                f"({first}.shape[{d}]):" for d in range(dims)]

    load = [f"{pad}l{k} = x{k}{leaf_at[k]}" for k in range(n_leaves)]
    compute = []
    for m, member in enumerate(members):
        expr, _ = ELEMENTWISE[member.fn]
        compute.append(f"{pad}v{m} = {typed(expr).format(**_names(member.args, dtype))}")
    last = len(members) - 1
    forward = (["def forward(out, " + ", ".join(leaves) + "):"] + loops("out") + load
               + compute + [f"{pad}out{at} = v{last}"])
    # reverse accumulation: d{m} is d(out)/d(member m) times the incoming gradient
    backward = (["def backward(g, " + ", ".join(leaves + [f"g{x}" for x in leaves]) + "):"]
                + loops("g") + load + compute)
    backward += [f"{pad}d{m} = {typed('0.0')}" for m in range(last)]
    backward += [f"{pad}gl{k} = {typed('0.0')}" for k in range(n_leaves)]
    backward.append(f"{pad}d{last} = g{at}")
    for m in range(last, -1, -1):
        member = members[m]
        _, derivatives = ELEMENTWISE[member.fn]
        names = _names(member.args, dtype, y=f"v{m}")
        for (kind, ref), derivative in zip(member.args, derivatives):
            if kind == "number":
                continue
            if kind == "leaf" and same[ref] != ref:
                continue   # (the leaf it shares a gradient with gets this term)
            target = f"d{ref}" if kind == "member" else f"gl{ref}"
            backward.append(f"{pad}{target} += d{m} * ({typed(derivative).format(**names)})")
    backward += [f"{pad}gx{k}{at} = gl{k}" for k in range(n_leaves) if same[k] == k]
    # (the flags in the first line: numba's disk cache does not tell compilations apart
    # by their flags, the file name, a hash of the source, does)
    flags = f"# generated by ember.compile; fastmath={sorted(FASTMATH)}\n"
    return (flags + HEADERS[dtype] + "\n\n" + "\n".join(forward + ["", ""] + backward)
            + "\n")


def _index(shape: tuple, out: tuple) -> str:
    """How a leaf of `shape`, broadcast to `out`, is indexed in the output's loops."""
    lead = len(out) - len(shape)
    parts = ["0" if n == 1 and out[lead + d] != 1 else f"i{lead + d}"
             for d, n in enumerate(shape)]
    return "[" + ", ".join(parts) + "]" if parts else "[()]"


def _names(args: tuple, dtype: str, y: str = "") -> dict:
    """``{a}``, ``{b}`` (and ``{y}``) of a member, as names or number literals."""
    out = {"y": y}
    for key, (kind, ref) in zip("ab", args):
        out[key] = (f"l{ref}" if kind == "leaf" else f"v{ref}" if kind == "member"
                    else _number(float(ref), dtype))
    return out


def _number(value: float, dtype: str) -> str:
    text = repr(value) if math.isfinite(value) else f"math.{'-' if value < 0 else ''}inf"
    if math.isnan(value):
        text = "math.nan"
    text = text.replace("math.-inf", "-math.inf")
    return f"f32({text})" if dtype == "float32" else text


_FLOAT_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?)")


def _float32_numbers(expression: str) -> str:
    """`expression` with each decimal number a float32 (``0.5`` -> ``f32(0.5)``)."""
    return _FLOAT_LITERAL.sub(r"f32(\1)", expression)
