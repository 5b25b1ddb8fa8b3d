"""From a trace to the graph: one converter call per record.

`Exporter` walks the records in order, finds each one's converter in the table
(Function class -> converter, module class -> module converter) and hands it a
`Call`: the record's arguments, the ONNX names of its tensor arguments (graph
inputs, initializers made from parameters on first use, outputs of earlier
records, constants), and helpers to emit nodes.  The converter binds the record's
outputs to ONNX values.

A second trace (run with the dynamic dims resized and the input values shuffled)
tells which dims and which op arguments vary with the inputs: converters of shape
ops turn a varying size into a computation on ``Shape`` (or a 0 / -1 in a Reshape);
a constant or argument that varies where nothing can express it is an error, not a
silently wrong graph.
"""

from __future__ import annotations

import numpy as np

from ._graph import ONNX_TYPES, Graph, ValueInfo
from ._trace import Record, Source, Trace, is_array
from .errors import UnsupportedOperatorError

INT64_MAX = np.iinfo(np.int64).max


def to_numpy(array) -> np.ndarray:
    """A backend array as a NumPy array (a copy for CuPy)."""
    if hasattr(array, "get") and not isinstance(array, np.ndarray):
        return array.get()
    return np.asarray(array)


def same(a, b) -> bool:
    """Equal values, for comparing what two traces recorded (arrays by content)."""
    if is_array(a) or is_array(b):
        if not (is_array(a) and is_array(b)):
            return False
        a, b = to_numpy(a), to_numpy(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and type(a) is type(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a usable ==
        return a is b


class Exporter:
    """Converts the records of `trace` into nodes of `graph` (see the module docstring)."""

    def __init__(self, graph: Graph, trace: Trace, check: Trace | None, named: dict,
                 export_params: bool, table: dict, module_table: dict):
        self.graph = graph
        self.trace, self.check = trace, check
        self.named = named
        self.param_names = {id(t): name for name, t in named.items()}
        self.export_params = export_params
        self.table, self.module_table = table, module_table
        self.values: dict = {}
        self._dim_owners: list = []   # (onnx name, axis, size, size in the check trace)
        self._dim_cache: dict = {}
        self._const_cache: dict = {}
        # what converters tell later converters, beyond ONNX values (e.g. the padded form
        # of a PackedSequence, keyed by ("packed", record index))
        self.notes: dict = {}

    # values -----------------------------------------------------------------

    def bind(self, key, name: str, shape, shape2) -> None:
        """Make `name` the ONNX value of `key` (an input, a parameter or a record output);
        its dims that differ in the check trace can later be read with Shape."""
        self.values[key] = name
        for axis, (n1, n2) in enumerate(zip(shape, shape2)):
            if n1 != n2:
                self._dim_owners.append((name, axis, n1, n2))

    def value(self, src: Source, src2: Source | None, rec: Record | None) -> str:
        """The ONNX name of a tensor argument's source."""
        kind, ref = src
        if kind == "const":
            return self.constant(ref, None if src2 is None else src2.ref, rec)
        key = (kind, ref)
        name = self.values.get(key)
        if name is not None:
            return name
        if kind == "param":
            return self._parameter(ref)
        k, j = ref
        producer = self.trace.records[k]
        why = self.notes.get(("unbound", k))
        raise UnsupportedOperatorError(
            f"ONNX export: output {j} of {producer.describe()} is used"
            + (f" by {rec.describe()}" if rec is not None else " as a model output")
            + ", but its converter does not produce it" + (f": {why}" if why else ""))

    def _parameter(self, name: str) -> str:
        tensor = self.named[name]
        data = to_numpy(tensor._data)
        if self.export_params:
            self.graph.add_initializer(np.array(data), name)
        else:
            self.graph.reserve(name)
            self.graph.inputs.append(ValueInfo(name, data.dtype, data.shape))
        self.bind(("param", name), name, data.shape, data.shape)
        return name

    def constant(self, array, array2, rec: Record | None) -> str:
        """A tensor made inside forward: an initializer, or, when its size follows a
        dynamic dim, a ConstantOfShape/Range computed from the inputs' shapes."""
        cached = self._const_cache.get(id(array))
        if cached is not None:
            return cached[1]
        data = to_numpy(array)
        if array2 is not None and not same(data, to_numpy(array2)):
            name = self._varying_constant(data, to_numpy(array2), rec)
        else:
            name = self.graph.add_initializer(np.array(data))
        self._const_cache[id(array)] = (array, name)  # (keeps the array, and its id, alive)
        return name

    def _varying_constant(self, a1: np.ndarray, a2: np.ndarray, rec) -> str:
        where = rec.describe() if rec is not None else "a model output"
        if a1.shape == a2.shape or a1.ndim != a2.ndim:
            raise UnsupportedOperatorError(
                f"ONNX export: a tensor used by {where} depends on the input values, but was "
                "computed outside ember's traced ops (e.g. .item(), .numpy(), .tolist(), "
                "Python arithmetic on data): the exported graph would hold it as a constant")
        flat1, flat2 = a1.reshape(-1), a2.reshape(-1)
        if flat1.size and (flat1 == flat1[0]).all() and flat2.size and (
                flat2 == flat1[0]).all():
            shape = self.shape_tensor(a1.shape, a2.shape, where)
            value = np.array([flat1[0]], dtype=a1.dtype)
            return self.graph.add_node("ConstantOfShape", [shape], value=value)[0]
        if a1.ndim == 1 and np.array_equal(a1, np.arange(a1.size)) and np.array_equal(
                a2, np.arange(a2.size)):
            size = self.dim_value(a1.size, a2.size, where)
            limit = self.graph.add_node("Squeeze", [size])[0]
            start = self.graph.add_initializer(np.array(0, dtype=np.int64))
            step = self.graph.add_initializer(np.array(1, dtype=np.int64))
            out = self.graph.add_node("Range", [start, limit, step])[0]
            if a1.dtype != np.int64:
                out = self.graph.add_node("Cast", [out], to=onnx_type(a1.dtype))[0]
            return out
        raise UnsupportedOperatorError(
            f"ONNX export: a tensor used by {where} depends on the inputs (its size and "
            "values), but was computed outside ember's traced ops (e.g. .item(), .numpy(), "
            ".tolist()); of the tensors made inside forward, only constant fills and "
            "arange(n) can follow a dynamic size")

    # dynamic dims ------------------------------------------------------------

    def dim_value(self, n1: int, n2: int, where: str) -> str:
        """A 1-element int64 tensor holding a dim that is n1 in the trace and n2 in the
        check trace: ``Shape(v)[axis]`` of the first value that has such a dim."""
        key = (n1, n2)
        if key in self._dim_cache:
            return self._dim_cache[key]
        for name, axis, m1, m2 in self._dim_owners:
            if (m1, m2) == key:
                out = self.graph.add_node("Shape", [name], start=axis, end=axis + 1)[0]
                self._dim_cache[key] = out
                return out
        raise UnsupportedOperatorError(
            f"ONNX export: {where} uses a size ({n1} in the traced run) that depends on a "
            "dynamic dim but matches no dim of any tensor in the graph")

    def shape_tensor(self, shape1, shape2, where: str) -> str:
        """A 1-D int64 tensor holding a shape whose varying entries come from Shape ops."""
        shape1, shape2 = tuple(int(s) for s in shape1), tuple(int(s) for s in shape2)
        if shape1 == shape2:
            return self.graph.add_initializer(np.array(shape1, dtype=np.int64))
        parts, static = [], []
        for a, b in zip(shape1, shape2):
            if a == b:
                static.append(a)
                continue
            if static:
                parts.append(self.graph.add_initializer(np.array(static, dtype=np.int64)))
                static = []
            parts.append(self.dim_value(a, b, where))
        if static:
            parts.append(self.graph.add_initializer(np.array(static, dtype=np.int64)))
        if len(parts) == 1:
            return parts[0]
        return self.graph.add_node("Concat", parts, axis=0)[0]

    # the walk ----------------------------------------------------------------

    def run(self) -> None:
        records2 = self.check.records if self.check is not None else None
        for rec in self.trace.records:
            rec2 = records2[rec.index] if records2 is not None else None
            convert = self._converter(rec)
            if rec2 is not None:
                self._compare(rec, rec2, convert)
            convert(Call(self, rec, rec2))

    def _converter(self, rec: Record):
        if rec.kind == "module":
            return self.module_table[rec.cls][1]
        cls = rec.cls
        convert = self.table.get(cls)
        if convert is None and cls._inplace:
            for base in cls.__mro__[1:]:
                if not getattr(base, "_inplace", True) and base in self.table:
                    convert = self.table[base]
                    break
        if convert is None:
            raise UnsupportedOperatorError(
                f"Exporting the operator '{cls.__name__}' to ONNX opset version "
                f"{self.graph.opset} is not supported: ember has no ONNX converter for it "
                f"(called at {rec.where}{rec.inside()})")
        return convert

    def _compare(self, rec: Record, rec2: Record, convert) -> None:
        """Arguments that differ between the traces must be ones the converter handles."""
        if getattr(convert, "dynamic", False):
            return
        for key, a, b in _arguments(rec, rec2):
            if not same(a, b):
                what = f"argument {key}" if isinstance(key, int) else f"'{key}'"
                raise UnsupportedOperatorError(
                    f"ONNX export: {what} of {rec.describe()} changes with the inputs "
                    f"({a!r} in the traced run, {b!r} with other inputs); the graph cannot "
                    "express it (it would be baked in as a constant)")


def _arguments(rec: Record, rec2: Record):
    """(key, value, value in the check trace) for the non-tensor arguments of a record."""
    for i, (a, b) in enumerate(zip(rec.args, rec2.args)):
        if rec.sources[i] is None:
            yield i, a, b
    for k, a in rec.params.items():
        if k not in rec.param_sources:
            yield k, a, rec2.params.get(k)


def onnx_type(dtype) -> int:
    """The TensorProto data type of a NumPy dtype."""
    name = np.dtype(dtype).name
    if name not in ONNX_TYPES:
        raise UnsupportedOperatorError(f"ONNX export: dtype {name} has no ONNX equivalent")
    return ONNX_TYPES[name]


class Call:
    """What a converter sees of one record, and how it emits nodes."""

    def __init__(self, ex: Exporter, rec: Record, rec2: Record | None):
        self.ex, self.rec, self.rec2 = ex, rec, rec2
        self.graph = ex.graph
        self.opset = ex.graph.opset
        self.scope = "/" + rec.scope.replace(".", "/") if rec.scope else ""

    # arguments ---------------------------------------------------------------

    @property
    def cls(self):
        return self.rec.cls

    @property
    def module(self):
        return self.rec.module

    def arg(self, i: int, default=None):
        """Positional argument `i` as recorded (tensors as tensors)."""
        args = self.rec.args
        return args[i] if i < len(args) else default

    def param(self, key: str, default=None):
        """Keyword parameter `key` as recorded."""
        return self.rec.params.get(key, default)

    def get(self, i: int, key: str, default=None):
        """An argument given either positionally (at `i`) or as keyword `key`."""
        return self.arg(i) if i < len(self.rec.args) else self.param(key, default)

    def get_input(self, i: int, key: str) -> str:
        """The ONNX name of a tensor/array argument given at `i` or as keyword `key`."""
        return self.input(i) if i < len(self.rec.args) else self.param_input(key)

    def static_dims(self, i: int, dims, why: str) -> None:
        """Refuse when a dim of argument `i` the converter reads as a number is dynamic."""
        if self.rec2 is None:
            return
        s1, s2 = self.shape(i), self.shape2(i)
        for d in dims:
            if s1[d] != s2[d]:
                self.fail(f"{why} along dim {d}, whose size is dynamic")

    def arg2(self, i: int, default=None):
        """Argument `i` in the check trace (the same as `arg` without one)."""
        rec = self.rec2 or self.rec
        return rec.args[i] if i < len(rec.args) else default

    def param2(self, key: str, default=None):
        rec = self.rec2 or self.rec
        return rec.params.get(key, default)

    def n_args(self) -> int:
        return len(self.rec.args)

    def is_tensor(self, i: int) -> bool:
        return i < len(self.rec.sources) and isinstance(self.rec.sources[i], Source)

    def input(self, i: int, like: int | None = None, dtype=None) -> str:
        """The ONNX name of argument `i`: its value for a tensor, a constant for a number
        (of `dtype`, or of the dtype of tensor argument `like`), '' for None."""
        if self.is_tensor(i):
            src2 = self.rec2.sources[i] if self.rec2 is not None else None
            return self.ex.value(self.rec.sources[i], src2, self.rec)
        value = self.arg(i)
        if value is None:
            return ""
        if dtype is None:
            dtype = self.dtype(like) if like is not None else self.out_dtype()
        return self.const(value, dtype)

    def inputs(self) -> list:
        """The ONNX names of all tensor arguments, in order."""
        return [self.input(i) for i in range(self.n_args()) if self.is_tensor(i)]

    def source_input(self, src, src2=None) -> str:
        """The ONNX name of a Source (from a sequence argument or a parameter)."""
        return self.ex.value(src, src2, self.rec)

    def tensor(self, t) -> str:
        """The ONNX name of a tensor the converter reads from a module (a parameter or
        buffer by its name, anything else as a constant)."""
        name = self.ex.param_names.get(id(t))
        if name is not None:
            return self.ex.value(Source("param", name), None, self.rec)
        return self.const(t._data)

    def param_input(self, key: str) -> str:
        """The ONNX name of an array/tensor keyword parameter (a mask, indices)."""
        src = self.rec.param_sources[key]
        src2 = self.rec2.param_sources.get(key) if self.rec2 is not None else None
        return self.ex.value(src, src2, self.rec)

    def shape(self, i: int) -> tuple:
        return tuple(self.arg(i).shape)

    def shape2(self, i: int) -> tuple:
        return tuple(self.arg2(i).shape)

    def dtype(self, i: int) -> np.dtype:
        a = self.arg(i)
        return np.dtype(a._data.dtype if hasattr(a, "_data") else a.dtype)

    def out_shape(self, j: int = 0) -> tuple:
        return tuple(self.rec.outputs[j].shape)

    def out_shape2(self, j: int = 0) -> tuple:
        return tuple((self.rec2 or self.rec).outputs[j].shape)

    def out_dtype(self, j: int = 0) -> np.dtype:
        return np.dtype(self.rec.outputs[j]._data.dtype)

    def n_outputs(self) -> int:
        return len(self.rec.outputs)

    def varies(self, i) -> bool:
        """Whether argument `i` (an index, or a parameter name) differs in the check trace."""
        if self.rec2 is None:
            return False
        if isinstance(i, int):
            return not same(self.arg(i), self.arg2(i))
        return not same(self.param(i), self.param2(i))

    # emitting ------------------------------------------------------------------

    def op(self, op_type: str, *inputs, outputs: int = 1, **attrs):
        """Emit a node; returns its output name (a list with ``outputs > 1``)."""
        names = self.graph.add_node(op_type, inputs, outputs, self.scope, **attrs)
        return names[0] if outputs == 1 else names

    def const(self, value, dtype=None) -> str:
        """An initializer holding `value` (a number or an array)."""
        array = np.asarray(to_numpy(value) if is_array(value) else value,
                           dtype=None if dtype is None else np.dtype(dtype))
        return self.graph.add_initializer(np.array(array))

    def ints(self, values) -> str:
        """A 1-D int64 initializer."""
        return self.const(np.array(list(values), dtype=np.int64).reshape(-1))

    def done(self, *names) -> None:
        """Bind the record's outputs, in order, to ONNX values (None: not produced)."""
        for j, name in enumerate(names):
            if name is None:
                continue
            t = self.rec.outputs[j]
            t2 = (self.rec2 or self.rec).outputs[j]
            self.ex.bind(("op", (self.rec.index, j)), name, t.shape, t2.shape)

    def fail(self, why: str):
        """Raise the error for an argument combination the converter cannot express."""
        raise UnsupportedOperatorError(f"ONNX export: {self.rec.describe()}: {why}")

    # small builders ------------------------------------------------------------

    def cast(self, x: str, dtype) -> str:
        return self.op("Cast", x, to=onnx_type(dtype))

    def unsqueeze(self, x: str, axes) -> str:
        return self.op("Unsqueeze", x, self.ints(axes))

    def squeeze(self, x: str, axes) -> str:
        return self.op("Squeeze", x, self.ints(axes))

    def transpose(self, x: str, perm) -> str:
        return self.op("Transpose", x, perm=[int(p) for p in perm])

    def reshape(self, x: str, shape) -> str:
        return self.op("Reshape", x, self.ints(shape))

    def slice(self, x: str, starts, ends, axes, steps=None) -> str:
        extra = [self.ints(steps)] if steps is not None else []
        return self.op("Slice", x, self.ints(starts), self.ints(ends), self.ints(axes), *extra)

    def reduce(self, op_type: str, x: str, axes, keepdims: bool) -> str:
        """A Reduce* node (axes as an input from opset 13 for ReduceSum, 18 for the rest)."""
        axes = [int(a) for a in axes]
        as_input = self.opset >= (13 if op_type == "ReduceSum" else 18)
        if as_input:
            return self.op(op_type, x, self.ints(axes), keepdims=int(keepdims))
        return self.op(op_type, x, axes=axes, keepdims=int(keepdims))

    def shape_tensor(self, shape1, shape2=None) -> str:
        """A 1-D int64 tensor for a shape; entries that vary between the traces are
        computed from the inputs' shapes."""
        return self.ex.shape_tensor(shape1, shape1 if shape2 is None else shape2,
                                    self.rec.describe())

    def dim_value(self, n1: int, n2: int) -> str:
        return self.ex.dim_value(n1, n2, self.rec.describe())
