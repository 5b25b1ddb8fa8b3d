"""Architecture optimization (``torch.ao``): quantization and the quantized modules."""

# quantization first: its workflows (quantize_dynamic, convert) import ao.nn's modules, which
# import ao.quantization's lower files (dtypes, quantized tensors, qconfigs), not the workflows
from . import quantization, nn

__all__ = ["nn", "quantization"]
