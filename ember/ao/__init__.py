"""Architecture optimization (``torch.ao``): quantization and the quantized modules."""

# quantization first: its workflows (quantize, convert) import the modules of ao.nn, which
# import only its lower files (dtypes, quantized tensors, qconfigs)
from . import quantization, nn  # noqa: I001

__all__ = ["nn", "quantization"]
