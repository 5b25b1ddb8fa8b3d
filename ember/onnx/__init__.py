"""ONNX export: ``ember.onnx.export(model, args, "model.onnx")``.

The model's forward is traced once (every op call recorded through ember's observer
hook), each recorded op becomes ONNX nodes through one small converter per op
(``_converters/``), and the graph is written with the ``onnx`` package (the ``onnx``
extra: ``pip install 'ember[onnx]'``).
"""

from . import errors
from ._export import OperatorExportTypes, TrainingMode, export, is_in_onnx_export
from .errors import OnnxExporterError, UnsupportedOperatorError

__all__ = ["OnnxExporterError", "OperatorExportTypes", "TrainingMode",
           "UnsupportedOperatorError", "errors", "export", "is_in_onnx_export"]
