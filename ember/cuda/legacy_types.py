"""``torch.cuda.FloatTensor`` and the other legacy CUDA tensor types (see
``ember/_legacy_types.py``)."""

from .._legacy_types import CUDA_TYPES

FloatTensor, DoubleTensor = CUDA_TYPES["FloatTensor"], CUDA_TYPES["DoubleTensor"]
HalfTensor, BFloat16Tensor = CUDA_TYPES["HalfTensor"], CUDA_TYPES["BFloat16Tensor"]
LongTensor, IntTensor = CUDA_TYPES["LongTensor"], CUDA_TYPES["IntTensor"]
ShortTensor, CharTensor = CUDA_TYPES["ShortTensor"], CUDA_TYPES["CharTensor"]
ByteTensor, BoolTensor = CUDA_TYPES["ByteTensor"], CUDA_TYPES["BoolTensor"]
ComplexFloatTensor = CUDA_TYPES["ComplexFloatTensor"]
ComplexDoubleTensor = CUDA_TYPES["ComplexDoubleTensor"]
