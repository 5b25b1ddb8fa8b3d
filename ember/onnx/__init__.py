"""ONNX export: ``ember.onnx.export(model, args, "model.onnx")``.

The model's forward is traced once (every op call recorded through ember's observer
hook), each recorded op becomes ONNX nodes through one small converter per op
(``_converters/``), and the graph is written with the ``onnx`` package (the ``onnx``
extra: ``pip install 'ember[onnx]'``).
"""

from ._convert import OnnxExporterError, UnsupportedOperatorError
from ._export import OperatorExportTypes, TrainingMode, export, is_in_onnx_export

__all__ = ["OnnxExporterError", "OperatorExportTypes", "TrainingMode",
           "UnsupportedOperatorError", "export", "is_in_onnx_export"]
