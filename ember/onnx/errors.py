"""The exceptions ONNX export raises."""

from __future__ import annotations


class OnnxExporterError(RuntimeError):
    """ONNX export failed."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op, or an argument of an op, that ONNX export cannot express."""


__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]
