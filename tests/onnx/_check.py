"""Export a model, check the file, run it in onnxruntime and compare with ember."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
from ember import nn
from ember.onnx._trace import flatten_tensors

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Lambda(nn.Module):
    """A module around a function of tensors (for exporting single ops)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def as_module(model):
    return model if isinstance(model, nn.Module) else Lambda(model)


def export_proto(model, args, **kwargs):
    """Export to memory and load the file back (checked by onnx.checker)."""
    buffer = io.BytesIO()
    ember.onnx.export(as_module(model), args, buffer, **kwargs)
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def run_onnx(proto, feeds: list) -> list:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # small graphs; keep the suite light on CPUs
    session = ort.InferenceSession(proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, feeds)))


def numpy_of(t) -> np.ndarray:
    return t.detach().numpy()


def check(model, args, others=(), rtol: float = 1e-4, atol: float = 1e-5, **kwargs):
    """Export `model` traced on `args`; run the file on `args` and on each tuple of
    `others` (other sizes along the dynamic dims) and compare with ember's outputs."""
    model = as_module(model)
    args = args if isinstance(args, tuple) else (args,)
    proto = export_proto(model, args, **kwargs)
    training = model.training
    mode = kwargs.get("training", ember.onnx.TrainingMode.EVAL)
    traced = {ember.onnx.TrainingMode.EVAL: False, ember.onnx.TrainingMode.TRAINING: True}.get(
        mode, training)
    for inputs in (args,) + tuple(others):
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        model.train(traced)  # the mode the export traced in
        expected = flatten_tensors(model(*inputs))
        model.train(training)
        got = run_onnx(proto, [numpy_of(t) for t in inputs])
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            e = numpy_of(e)
            assert g.shape == e.shape, (g.shape, e.shape)
            assert g.dtype == e.dtype, (g.dtype, e.dtype)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return proto


def op_types(proto) -> set:
    return {n.op_type for n in proto.graph.node}


def grown(t, extra: int = 2):
    """`t` with `extra` more rows along dim 0 (repeating its first rows)."""
    idx = ember.arange(t.shape[0] + extra) % t.shape[0]
    return t[idx]


def check_fn(fn, *tensors, batch: bool = True, opset: int | None = None, **kwargs):
    """`check` for a function of tensors; with `batch`, dim 0 of every input is dynamic and
    the file also runs on inputs with 2 more rows."""
    names = [f"input_{i}" for i in range(len(tensors))]
    if batch:
        kwargs.setdefault("dynamic_axes", {n: {0: "batch"} for n in names})
        kwargs.setdefault("others", [tuple(grown(t) for t in tensors)])
    return check(fn, tuple(tensors), input_names=names, opset_version=opset, **kwargs)
