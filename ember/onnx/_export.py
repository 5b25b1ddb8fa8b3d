"""``ember.onnx.export``: trace, convert, clean up, write.

1. Trace ``model(*args)`` once (`_trace.py`).
2. Trace it again as a check, with every dynamic dim resized and the input values
   shuffled: dims, arguments and constants that change with the inputs are found by
   comparing the two traces (`_convert.py` turns varying dims into Shape computations
   and refuses what it cannot express).
3. Convert each record with its converter (`_converters/`), bind the outputs.
4. Drop unused nodes, fold constant subgraphs, build the ModelProto (`_write.py`),
   check it with ``onnx.checker`` and save it.
"""

from __future__ import annotations

import enum
import inspect
import os
import warnings

import numpy as np

from .._core.backend import device_of, to_backend
from .._core.tensor import Tensor, _make
from ..version import __version__
from ._convert import Exporter, to_numpy
from ._converters import FUNCTIONS, MODULE_TABLE, TABLE, module_converter
from ._graph import Graph, Node, ValueInfo
from ._trace import STATE, flatten_tensors, trace
from ._write import NodeEvaluator, build_model, require_onnx
from .errors import OnnxExporterError

DEFAULT_OPSET = 17
MIN_OPSET = 13


class TrainingMode(enum.IntEnum):
    """The mode the model is traced in: eval (the default), as it is, or training."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """Only standard ONNX ops are emitted."""

    ONNX = 0


def is_in_onnx_export() -> bool:
    """True while ``ember.onnx.export`` is tracing a model."""
    return STATE["exporting"]


def export(model, args=(), f=None, *, kwargs: dict | None = None, export_params: bool = True,
           verbose: bool = False, training: TrainingMode = TrainingMode.EVAL,
           input_names=None, output_names=None,
           operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
           opset_version: int | None = None, do_constant_folding: bool = True,
           dynamic_axes=None, keep_initializers_as_inputs: bool | None = None,
           custom_opsets=None, export_modules_as_functions: bool = False,
           autograd_inlining: bool = True, dynamo: bool = False):
    """Write `model` as an ONNX file, by tracing one call ``model(*args, **kwargs)``.

    Args:
        model: an ``nn.Module`` (or any callable of tensors).
        args: the example inputs: a tensor, or a tuple of positional arguments (a dict as
            its last element holds keyword arguments).  Tensors become graph inputs.
        f: a path or a binary file object; None returns the ``onnx.ModelProto``.
        export_params: store the parameters and buffers in the file (as initializers,
            named as in ``state_dict``); False makes them graph inputs.
        verbose: print the graph.
        training: trace in eval mode (default), as the model is, or in training mode.
        input_names, output_names: names of the graph's inputs and outputs.
        opset_version: the ONNX opset (default 17; 13 and later are supported).
        do_constant_folding: replace subgraphs that depend only on parameters and
            constants by their values.
        dynamic_axes: ``{name: {dim: "symbol"}}`` or ``{name: [dims]}``: these dims of
            those inputs/outputs are symbolic in the graph, which then runs with other
            sizes there (e.g. any batch size).
        keep_initializers_as_inputs: also list the initializers as graph inputs.
        operator_export_type, custom_opsets, export_modules_as_functions,
        autograd_inlining, dynamo: PyTorch's; ember has one exporter (this tracer) that
            emits standard ONNX ops only.

    Python control flow in ``forward`` is run once and baked into the graph.  Ops
    without a converter raise ``UnsupportedOperatorError`` naming the op and the line
    of the model's code that called it.  Needs the ``onnx`` extra (onnx, onnxruntime).

    >>> ember.onnx.export(model, ember.randn(1, 1, 28, 28), "mnist.onnx",
    ...                   input_names=["image"], dynamic_axes={"image": {0: "batch"}})
    """
    onnx = require_onnx()
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ValueError("ember.onnx.export emits standard ONNX ops only")
    if export_modules_as_functions:
        raise NotImplementedError("export_modules_as_functions is not supported")
    if custom_opsets:
        raise NotImplementedError("custom_opsets is not supported (no custom ops exist)")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(f"opset_version {opset} is not supported: use {MIN_OPSET} to {newest}")
    args, kwargs = _split_args(args, kwargs)
    named = _named_tensors(model)
    module_names = ({id(m): name for name, m in model.named_modules()}
                    if hasattr(model, "named_modules") else {})
    with _TrainingModeFor(model, training):
        first = trace(model, args, kwargs, named, module_names, module_converter, FUNCTIONS)
        in_names = _names(input_names, len(first.inputs), _default_input_names(model, args,
                                                                             kwargs))
        out_names = _names(output_names, len(first.outputs),
                           ["output"] if len(first.outputs) == 1 else
                           [f"output_{i}" for i in range(len(first.outputs))])
        axes = _dynamic_axes(dynamic_axes, in_names, out_names)
        check = _check_trace(model, args, kwargs, named, module_names, first, in_names, axes,
                             training)
    graph = Graph(opset)
    exporter = Exporter(graph, first, check, named, export_params, TABLE, MODULE_TABLE)
    symbols = _bind_inputs(graph, exporter, first, check, in_names, axes)
    exporter.run()
    _bind_outputs(graph, exporter, first, check, out_names, axes, symbols)
    graph.prune()
    if do_constant_folding and graph.fold_constants(NodeEvaluator(opset)):
        graph.prune()
    proto = build_model(graph, bool(keep_initializers_as_inputs), _version())
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is None:
        return proto
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())
    return None


# ---------------------------------------------------------------------------
# arguments


def _split_args(args, kwargs):
    if isinstance(args, Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None and args and isinstance(args[-1], dict):
        args, kwargs = args[:-1], args[-1]
    return args, dict(kwargs or {})


def _named_tensors(model) -> dict:
    named = {}
    if hasattr(model, "named_parameters"):
        named.update(model.named_parameters())
    if hasattr(model, "named_buffers"):
        named.update((k, v) for k, v in model.named_buffers() if v is not None)
    return named


class _TrainingModeFor:
    """Put the model's modules in the export's training mode, and restore them after."""

    def __init__(self, model, training):
        self.model, self.training = model, training

    def __enter__(self):
        modules = list(self.model.modules()) if hasattr(self.model, "modules") else []
        self.saved = [(m, m.training) for m in modules]
        if self.training == TrainingMode.EVAL and modules:
            self.model.train(False)
        elif self.training == TrainingMode.TRAINING and modules:
            self.model.train(True)

    def __exit__(self, *exc):
        for m, flag in self.saved:
            m.training = flag
        return False


def _default_input_names(model, args, kwargs) -> list:
    """The names of forward's parameters that received tensors, where they can be told."""
    try:
        params = list(inspect.signature(getattr(model, "forward", model)).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) and params[i] not in ("args", "kwargs") else \
            f"input_{i}"
        n = len(flatten_tensors(a))
        names += [base] if n == 1 else [f"{base}_{j}" for j in range(n)]
    for k, v in kwargs.items():
        n = len(flatten_tensors(v))
        names += [k] if n == 1 else [f"{k}_{j}" for j in range(n)]
    return names


def _names(given, count: int, default: list) -> list:
    given = list(given or [])
    if len(given) > count:
        raise ValueError(f"ONNX export: {len(given)} names given for {count} tensors")
    default = default + [f"input_{i}" for i in range(len(default), count)]
    names = given + default[len(given):count]
    if len(set(names)) != len(names):
        raise ValueError(f"ONNX export: names must be unique, got {names}")
    return names


def _dynamic_axes(dynamic_axes, in_names, out_names) -> dict:
    """{tensor name: {dim: symbol}} from either of PyTorch's two forms."""
    out = {}
    for key, dims in (dynamic_axes or {}).items():
        if key not in in_names and key not in out_names:
            warnings.warn(f"ONNX export: dynamic_axes names '{key}', which is neither an input "
                          "nor an output name", UserWarning, stacklevel=3)
            continue
        if isinstance(dims, dict):
            out[key] = {int(d): str(s) for d, s in dims.items()}
        else:
            out[key] = {int(d): f"{key}_dynamic_axes_{i + 1}" for i, d in enumerate(dims)}
    return out


# ---------------------------------------------------------------------------
# the check trace


def _check_trace(model, args, kwargs, named, module_names, first, in_names, axes, training):
    """Trace again with the dynamic dims resized and the values shuffled (see module doc);
    None when that run cannot be compared (and no dim is dynamic)."""
    symbols = sorted({s for name in in_names for s in axes.get(name, {}).values()})
    resize = any(axes.get(name) for name in in_names)
    attempts = [True, False] if resize else [True]
    if training == TrainingMode.TRAINING:
        attempts = [False] if resize else []
    problem = None
    for shuffle in attempts:
        swap = {}
        for i, t in enumerate(first.inputs):
            dims = axes.get(in_names[i], {})
            swap[id(t)] = _other_input(t, {d: symbols.index(s) for d, s in dims.items()},
                                       shuffle)
        args2, kwargs2 = _replace(args, swap), _replace(kwargs, swap)
        try:
            # the check run's own warnings (NaNs from shuffled masks, ...) are noise here
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                second = trace(model, args2, kwargs2, named, module_names, module_converter,
                               FUNCTIONS)
        except Exception as exc:  # noqa: BLE001 - reported below
            problem = f"the model failed on other inputs ({type(exc).__name__}: {exc})"
            continue
        problem = _alignment_problem(first, second)
        if problem is None:
            return second
    if problem is None:
        return None
    if resize:
        raise OnnxExporterError(f"ONNX export with dynamic_axes: {problem}; the traced ops must "
                                "not depend on the sizes of the dynamic dims")
    warnings.warn(f"ONNX export: {problem}: the graph holds the ops of the traced run only "
                  "(and the inputs' values may be baked in)", UserWarning, stacklevel=3)
    return None


def _other_input(t: Tensor, grow: dict, shuffle: bool) -> Tensor:
    data = to_numpy(t._data)
    for d, k in grow.items():
        n = data.shape[d]
        if n == 0:
            raise OnnxExporterError("ONNX export: a dynamic dim of an example input is 0")
        data = np.take(data, np.arange(n + 1 + k) % n, axis=d)
    if shuffle and data.size > 1:
        data = np.roll(data.reshape(-1), 1).reshape(data.shape)
    data = np.ascontiguousarray(data)
    if type(t._data) is not np.ndarray:
        data = to_backend(data, device_of(t._data))
    return _make(data)


def _replace(obj, swap: dict):
    if isinstance(obj, Tensor):
        return swap.get(id(obj), obj)
    if isinstance(obj, tuple):
        return type(obj)(*(_replace(o, swap) for o in obj)) if hasattr(obj, "_fields") else \
            tuple(_replace(o, swap) for o in obj)
    if isinstance(obj, list):
        return [_replace(o, swap) for o in obj]
    if isinstance(obj, dict):
        return {k: _replace(v, swap) for k, v in obj.items()}
    return obj


def _alignment_problem(first, second) -> str | None:
    if len(first.records) != len(second.records) or len(first.outputs) != len(second.outputs):
        return "the model runs different ops for other inputs"
    for r1, r2 in zip(first.records, second.records):
        if (r1.kind, r1.cls, r1.module) != (r2.kind, r2.cls, r2.module) or len(
                r1.outputs) != len(r2.outputs) or not _same_sources(r1.sources, r2.sources):
            return (f"the model runs different ops for other inputs (at {r1.describe()})")
        if any(t1.dim() != t2.dim() for t1, t2 in zip(r1.outputs, r2.outputs)):
            return f"the rank of an output of {r1.describe()} changes with the inputs"
    return None


def _same_sources(a, b) -> bool:
    """Tensor arguments that come from the same place in both traces."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            _same_sources(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    if a.kind == "const" or b.kind == "const":
        return a.kind == b.kind
    return a == b


# ---------------------------------------------------------------------------
# graph inputs and outputs


def _bind_inputs(graph, exporter, first, check, in_names, axes) -> dict:
    """Declare the graph inputs; returns {(size, size in the check trace): symbol}."""
    symbols = {}
    for i, (t, name) in enumerate(zip(first.inputs, in_names)):
        shape = tuple(t.shape)
        shape2 = tuple(check.inputs[i].shape) if check is not None else shape
        dims = axes.get(name, {})
        declared = tuple(dims.get(d, n) for d, n in enumerate(shape))
        for d, s in dims.items():
            symbols.setdefault((shape[d], shape2[d]), s)
        graph.reserve(name)
        graph.inputs.append(ValueInfo(name, np.dtype(t._data.dtype), declared))
        exporter.bind(("input", i), name, shape, shape2)
    return symbols


def _bind_outputs(graph, exporter, first, check, out_names, axes, symbols) -> None:
    taken = {v.name for v in graph.inputs}
    for j, (t, name) in enumerate(zip(first.outputs, out_names)):
        src = first.output_sources[j]
        src2 = check.output_sources[j] if check is not None else None
        value = exporter.value(src, src2, None)
        producers = graph.producers()
        if value in producers and value not in taken and value not in graph.initializers:
            _rename(graph, exporter, value, name)
        else:
            graph.reserve(name)
            graph.nodes.append(_identity(value, name))
        taken.add(name)
        shape = tuple(t.shape)
        shape2 = tuple(check.outputs[j].shape) if check is not None else shape
        dims = dict(axes.get(name, {}))
        for d, (a, b) in enumerate(zip(shape, shape2)):
            if a != b and d not in dims:
                dims[d] = symbols.get((a, b), f"{name}_dim_{d}")
        declared = tuple(dims.get(d, n) for d, n in enumerate(shape))
        graph.outputs.append(ValueInfo(name, np.dtype(t._data.dtype), declared))


def _identity(src: str, dst: str):
    return Node("Identity", [src], [dst], {}, f"/Identity_{dst}")


def _rename(graph, exporter, old: str, new: str) -> None:
    graph.reserve(new)
    for node in graph.nodes:
        node.inputs = [new if i == old else i for i in node.inputs]
        node.outputs = [new if o == old else o for o in node.outputs]
    exporter.values = {k: new if v == old else v for k, v in exporter.values.items()}


def _version() -> str:
    return __version__


__all__ = ["OperatorExportTypes", "TrainingMode", "export", "is_in_onnx_export"]
