"""Generated numba kernels for fused chains of elementwise ops.

A fused chain is a small expression DAG: each member is one elementwise op (``Mul``,
``Tanh``, ...) whose arguments are leaves (tensors computed outside the chain, all of
the output's shape), Python numbers, or earlier members.  `ELEMENTWISE` is the one table
this module reads: op class -> the scalar expression of its forward and of the
derivative of its output with respect to each argument, written with ``{a}``/``{b}``
for the arguments and ``{y}`` for the output.

`ChainKernel` turns a chain into two kernels over flat arrays: a forward one that
computes every member for element ``i`` in registers and writes the last, and a
backward one that recomputes the members, runs the chain rule backwards through the
derivative expressions and writes one gradient per leaf.  The source is built once per
chain signature (`source` is the cache key) and compiled by numba on first use, in a
serial form and a parallel (``prange``) one for large arrays; the source is kept in a
file of `cache_dir` so that numba caches the machine code on disk for later processes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass

import numpy as np

from ..ops import _native as native
from ..ops.activation import Gelu, Silu
from ..ops.arithmetic import Abs, Add, Div, Mul, Neg, Rsub, RsubScalar, Sub
from ..ops.elementwise import Cos, Exp, Log, Relu, Rsqrt, Sin, Sqrt, Tanh
from ..ops.elementwise_special import Sigmoid

_SIGMOID = "(1.0 / (1.0 + math.exp(-{a})))"
_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327

# op class -> (forward expression, derivative of the output by each argument)
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
    Exp: ("math.exp({a})", ("{y}",)),
    Log: ("math.log({a})", ("1.0 / {a}",)),
    Sqrt: ("math.sqrt({a})", ("0.5 / {y}",)),
    Rsqrt: ("1.0 / math.sqrt({a})", ("-0.5 * {y} * {y} * {y}",)),
    Sin: ("math.sin({a})", ("math.cos({a})",)),
    Cos: ("math.cos({a})", ("-math.sin({a})",)),
    Tanh: ("math.tanh({a})", ("1.0 - {y} * {y}",)),
    Sigmoid: (_SIGMOID, ("{y} * (1.0 - {y})",)),
    Silu: ("{a} * " + _SIGMOID, (_SIGMOID + " * (1.0 + {a} * (1.0 - " + _SIGMOID + "))",)),
    Gelu: (f"0.5 * {{a}} * (1.0 + math.erf({{a}} * {_INV_SQRT2}))",
           (f"0.5 * (1.0 + math.erf({{a}} * {_INV_SQRT2})) "
            f"+ {{a}} * {_INV_SQRT_2PI} * math.exp(-0.5 * {{a}} * {{a}})",)),
}


def fusable_params(fn: type, params: dict) -> bool:
    """Whether an op's keyword parameters keep it within its table entry."""
    if fn is Gelu:
        return params.get("approximate", "none") == "none"
    return not params


@dataclass(frozen=True)
class Member:
    """One op of a chain: its class and, per argument, ``("leaf", k)``, ``("member", m)``
    or ``("number", value)``."""

    fn: type
    args: tuple


class ChainKernel:
    """The forward and backward kernels of one chain (see the module docstring)."""

    PARALLEL_FROM = 1 << 16  # elements; below it a thread pool costs more than it saves

    def __init__(self, members: tuple, n_leaves: int, ndim: int | None = None):
        self.members = members
        self.n_leaves = n_leaves
        self.ndim = ndim  # None: flat arrays; else arrays of this rank >= 1 (broadcast leaves)
        self.source = _source(members, n_leaves, ndim)
        self._compiled: dict = {}

    def forward(self, out: np.ndarray, leaves: list) -> None:
        """Write the chain's value for `leaves` into `out` (all flat, or all of `ndim`
        dimensions and `out`'s shape, leaves possibly broadcast views)."""
        self._kernel("forward", out.size)(out, *leaves)

    def backward(self, grad: np.ndarray, leaves: list, grads: list) -> None:
        """Write d(out)/d(leaf) * `grad` into each array of `grads` (`grad`'s shape)."""
        self._kernel("backward", grad.size)(grad, *leaves, *grads)

    def _kernel(self, which: str, size: int):
        parallel = size >= self.PARALLEL_FROM
        key = (which, parallel)
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._compiled[key] = _compile(self.source, which, parallel)
        return fn


_CACHE: dict = {}  # (source, which, parallel) -> compiled kernel, shared by equal chains


def _compile(source: str, which: str, parallel: bool):
    key = (source, which, parallel)
    fn = _CACHE.get(key)
    if fn is None:
        python_fn, on_disk = _load(source, which)
        # (error_model="numpy": a division by zero gives inf or nan, as NumPy does)
        fn = _CACHE[key] = native._load_numba().njit(
            nogil=True, parallel=parallel, error_model="numpy", cache=on_disk)(python_fn)
    return fn


def cache_dir() -> str:
    """Where generated kernel sources (and numba's compiled forms of them) are kept:
    ``$EMBER_COMPILE_CACHE``, else ``~/.cache/ember/compile``."""
    return os.environ.get("EMBER_COMPILE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "ember", "compile")


def _load(source: str, which: str):
    """The Python function `which` of `source`, and whether it lives in a file.

    A kernel whose source is a file can be cached on disk by numba (``cache=True``), so a
    later process loads the machine code instead of compiling again; the file is named by
    a hash of the source.  Where the cache folder cannot be written, the source is run
    in memory and compiled in every process.
    """
    text = "import math\n\nfrom numba import prange\n\n\n" + source
    name = "chain_" + hashlib.sha256(text.encode()).hexdigest()[:24]
    path = os.path.join(cache_dir(), name + ".py")
    try:
        if not os.path.exists(path):
            os.makedirs(cache_dir(), exist_ok=True)
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


def _source(members: tuple, n_leaves: int, ndim: int | None) -> str:
    """Python source of ``forward(out, x0, ..)`` and ``backward(g, x0, .., gx0, ..)``:
    a loop over the elements (one loop over flat arrays, or one per dimension, the
    first parallel) whose body computes the chain in registers."""
    leaves = [f"x{k}" for k in range(n_leaves)]
    dims = 1 if ndim is None else ndim
    at = "[i]" if ndim is None else "[" + ", ".join(f"i{d}" for d in range(dims)) + "]"
    pad = "    " * (1 + dims)

    def loops(first: str) -> list:
        if ndim is None:
            return [f"    for i in prange({first}.shape[0]):"]
        return [f"{'    ' * (d + 1)}for i{d} in {'prange' if d == 0 else 'range'}"
                f"({first}.shape[{d}]):" for d in range(dims)]

    load = [f"{pad}l{k} = x{k}{at}" for k in range(n_leaves)]
    compute = []
    for m, member in enumerate(members):
        expr, _ = ELEMENTWISE[member.fn]
        compute.append(f"{pad}v{m} = {expr.format(**_names(member.args))}")
    last = len(members) - 1
    forward = (["def forward(out, " + ", ".join(leaves) + "):"] + loops("out") + load
               + compute + [f"{pad}out{at} = v{last}"])
    # reverse accumulation: d{m} is d(out)/d(member m) times the incoming gradient
    backward = (["def backward(g, " + ", ".join(leaves + [f"g{x}" for x in leaves]) + "):"]
                + loops("g") + load + compute)
    backward += [f"{pad}d{m} = 0.0" for m in range(last)]
    backward += [f"{pad}gl{k} = 0.0" for k in range(n_leaves)]
    backward.append(f"{pad}d{last} = g{at}")
    for m in range(last, -1, -1):
        member = members[m]
        _, derivatives = ELEMENTWISE[member.fn]
        names = _names(member.args, y=f"v{m}")
        for (kind, ref), derivative in zip(member.args, derivatives):
            if kind == "number":
                continue
            target = f"d{ref}" if kind == "member" else f"gl{ref}"
            backward.append(f"{pad}{target} += d{m} * ({derivative.format(**names)})")
    backward += [f"{pad}gx{k}{at} = gl{k}" for k in range(n_leaves)]
    return "\n".join(forward + [""] + backward) + "\n"


def _names(args: tuple, y: str = "") -> dict:
    """``{a}``, ``{b}`` (and ``{y}``) of a member, as names or number literals."""
    out = {"y": y}
    for key, (kind, ref) in zip("ab", args):
        out[key] = (f"l{ref}" if kind == "leaf" else f"v{ref}" if kind == "member"
                    else repr(float(ref)))
    return out
