"""ember.onnx.export: its arguments, names, modes, dynamic axes and its errors."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import ember
from ember import nn
from tests.onnx._check import Lambda, check, check_fn, export_proto, onnx, op_types, run_onnx


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x, scale=None):
        out = self.drop(self.fc(x))
        return out if scale is None else out * scale


def _inputs(proto):
    return [i.name for i in proto.graph.input]


def test_writes_a_file_and_a_stream(tmp_path):
    model, x = Small(), ember.randn(2, 4)
    path = tmp_path / "small.onnx"
    assert ember.onnx.export(model, x, path) is None
    stream = io.BytesIO()
    ember.onnx.export(model, (x,), stream)
    from_file = onnx.load(str(path))
    assert from_file.SerializeToString() == stream.getvalue()
    assert from_file.producer_name == "ember"
    proto = ember.onnx.export(model, x)  # no file: the ModelProto
    assert proto.graph.output[0].name == "output"


def test_names_default_to_forward_parameters():
    proto = export_proto(Small(), ember.randn(2, 4))
    assert _inputs(proto) == ["x"]
    proto = export_proto(Small(), ember.randn(2, 4), input_names=["features"],
                         output_names=["scores"])
    assert _inputs(proto) == ["features"] and proto.graph.output[0].name == "scores"


def test_keyword_arguments_are_inputs():
    model, x, s = Small(), ember.randn(2, 4), ember.randn(3)
    proto = export_proto(model, (x, {"scale": s}))
    assert _inputs(proto) == ["x", "scale"]
    model.eval()
    expected = model(x, scale=s).detach().numpy()
    np.testing.assert_allclose(run_onnx(proto, [x.numpy(), s.numpy()])[0], expected, rtol=1e-5)


def test_dynamic_axes_list_form_names_the_dims():
    proto = export_proto(Small(), ember.randn(2, 4), input_names=["x"], output_names=["y"],
                         dynamic_axes={"x": [0], "y": [0]})
    dim = proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "x_dynamic_axes_1"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"


def test_output_dims_follow_the_input_symbols():
    proto = export_proto(Small(), ember.randn(2, 4), input_names=["x"],
                         dynamic_axes={"x": {0: "batch"}})
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_parameters_as_inputs():
    model, x = Small(), ember.randn(2, 4)
    proto = export_proto(model, x, export_params=False)
    assert _inputs(proto) == ["x", "fc.weight", "fc.bias"]
    assert not proto.graph.initializer
    got = run_onnx(proto, [x.numpy(), model.fc.weight.detach().numpy(),
                           model.fc.bias.detach().numpy()])
    np.testing.assert_allclose(got[0], model.eval()(x).detach().numpy(), rtol=1e-5)


def test_keep_initializers_as_inputs():
    proto = export_proto(Small(), ember.randn(2, 4), keep_initializers_as_inputs=True)
    assert _inputs(proto) == ["x", "fc.weight", "fc.bias"]
    assert len(proto.graph.initializer) == 2


def test_verbose_prints_the_graph(capsys):
    export_proto(Small(), ember.randn(2, 4), verbose=True)
    assert "Gemm" in capsys.readouterr().out


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.randn(4))
        self.register_buffer("shift", ember.randn(4))
        self.table = ember.randn(4)  # a plain tensor attribute: a constant

    def forward(self, x):
        return x * (self.w.exp() * 2 + self.shift) + self.table


@pytest.mark.parametrize("fold", [True, False])
def test_constant_folding(fold):
    proto = check(Scaled(), ember.randn(3, 4), do_constant_folding=fold)
    if fold:
        assert op_types(proto) == {"Mul", "Add"}
        assert len(proto.graph.node) == 2
    else:
        assert "Exp" in op_types(proto)
        assert {"w", "shift"} <= {i.name for i in proto.graph.initializer}


def test_shared_parameters_are_stored_once():
    fc = nn.Linear(4, 4)
    model = nn.Sequential(fc, nn.Tanh(), fc)
    proto = check(model, ember.randn(2, 4))
    assert len(proto.graph.initializer) == 2


@pytest.mark.parametrize("mode, traced", [("EVAL", False), ("TRAINING", True),
                                          ("PRESERVE", None)])
def test_training_mode_is_restored(mode, traced):
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(self.training)
            return x + 1

    model = nn.Sequential(Probe())
    model.train(True)
    proto = export_proto(model, ember.randn(2, 3), training=getattr(ember.onnx.TrainingMode,
                                                                     mode))
    assert seen and all(s == (True if traced is None else traced) for s in seen)
    assert model.training and model[0].training
    assert op_types(proto) == {"Add"}


def test_training_mode_dropout_is_a_dropout_node():
    proto = export_proto(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.25)), ember.randn(3, 4),
                         training=ember.onnx.TrainingMode.TRAINING)
    assert "Dropout" in op_types(proto)


def test_is_in_onnx_export():
    seen = []
    export_proto(lambda x: seen.append(ember.onnx.is_in_onnx_export()) or x * 2,
                 ember.randn(2))
    assert seen and all(seen)
    assert not ember.onnx.is_in_onnx_export()


@pytest.mark.parametrize("opset", [13, 14, 17, 18, 20])
def test_opsets(opset):
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.GELU(), nn.Flatten(),
                          nn.LayerNorm(16)).eval()
    proto = check_fn(model, ember.randn(2, 2, 4, 4), opset=opset)
    assert proto.opset_import[0].version == opset


def test_opset_out_of_range():
    with pytest.raises(ValueError, match="opset_version 12"):
        ember.onnx.export(Small(), ember.randn(2, 4), opset_version=12)


def test_identity_and_repeated_outputs():
    proto = check(Lambda(lambda x, y: (x, y * 2, y * 2, x)), (ember.randn(2), ember.randn(3)))
    assert [o.name for o in proto.graph.output] == [f"output_{i}" for i in range(4)]


def test_non_tensor_arguments_are_baked_in():
    x = ember.randn(3)
    proto = export_proto(lambda x, n, flag: x * n if flag else x, (x, 3, True))
    assert _inputs(proto) == ["input_0"]
    np.testing.assert_allclose(run_onnx(proto, [x.numpy()])[0], x.numpy() * 3, rtol=1e-6)


# ---------------------------------------------------------------------------
# errors


def test_unsupported_op_names_the_op_and_the_line():
    def forward(x):
        return x.erfinv()  # the line the error must point at

    line = forward.__code__.co_firstlineno + 1
    with pytest.raises(ember.onnx.UnsupportedOperatorError) as info:
        export_proto(forward, ember.randn(2, 3))
    message = str(info.value)
    assert "'Erfinv'" in message and "opset version 17 is not supported" in message
    assert f"test_export.py:{line}" in message


def test_unsupported_op_names_the_module():
    class Inner(nn.Module):
        def forward(self, x):
            return x.erfinv()

    model = nn.Sequential(nn.Linear(2, 2), Inner())
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match=r"inside '1' \(Inner\)"):
        export_proto(model, ember.randn(2, 2))


def test_values_computed_outside_ops_are_refused():
    table = ember.randn(5, 3)

    def forward(x):  # an index made with NumPy is not recorded by the tracer
        return table[ember.from_numpy(x.detach().numpy().argmax(1))] * 2

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="depends on the input"):
        export_proto(forward, ember.randn(4, 5))


def test_python_numbers_from_dynamic_sizes_are_refused():
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="changes with the inputs"):
        export_proto(lambda x: x * x.shape[0], ember.randn(2, 3), input_names=["x"],
                     dynamic_axes={"x": {0: "batch"}})


def test_control_flow_on_dynamic_sizes_is_refused():
    def forward(x):
        return x * 2 if x.shape[0] < 3 else x + 1

    with pytest.raises(ember.onnx.OnnxExporterError, match="different ops"):
        export_proto(forward, ember.randn(2, 3), input_names=["x"],
                     dynamic_axes={"x": {0: "batch"}})


def test_control_flow_on_values_warns():
    def forward(x):
        return x * 2 if float(x[0]) > 0 else x - 1

    x = ember.tensor([3.0, -1.0, -1.5])  # shuffling the values flips the branch
    with pytest.warns(UserWarning, match="different ops"):
        export_proto(forward, x)


def test_missing_onnx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"ember\[onnx\]"):
        ember.onnx.export(Small(), ember.randn(2, 4))
