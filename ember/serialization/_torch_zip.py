"""Reading the zip files that ``torch.save`` writes, without PyTorch.

Such a file is a zip archive with one top folder (``archive/`` nowadays) holding
``data.pkl`` (the pickled object), ``data/<key>`` (the raw bytes of each storage),
``byteorder`` and ``version``.  The pickle names PyTorch's rebuild functions and storage
types; here they resolve to the small, checking functions below, which build ember
tensors over NumPy arrays of the storages, so tensors that shared a storage share memory
again.  The pickle goes through the same restricted unpickler as ember's own files.
"""

from __future__ import annotations

import zipfile

import numpy as np

from .._core import dtype as dtypes
from .._core.device import device as Device
from .._core.tensor import Size, Tensor, _make
from ._restricted_pickle import UnpicklingError, unpickle
from ..nn.parameter import Parameter

ZIP_MAGIC = b"PK\x03\x04"
_MAX_DIMS = 64


class _StorageType:
    """Stands for ``torch.FloatStorage`` & co.: only the element dtype matters."""

    def __init__(self, name: str, dtype: dtypes.dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Storage:
    __slots__ = ("array", "location")

    def __init__(self, array: np.ndarray, location: str):
        self.array = array
        self.location = location


class _TypeMarker:
    """Stands for ``torch.Tensor`` / ``torch.nn.Parameter`` in ``_rebuild_from_type_v2``."""

    def __init__(self, name: str):
        self.name = name


_STORAGE_DTYPES = {
    "FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64,
    "HalfStorage": dtypes.float16, "BFloat16Storage": dtypes.bfloat16,
    "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool,
    "ComplexFloatStorage": dtypes.complex64, "ComplexDoubleStorage": dtypes.complex128,
}
_TORCH_DTYPES = {
    "float32": dtypes.float32, "float": dtypes.float32, "float64": dtypes.float64,
    "double": dtypes.float64, "float16": dtypes.float16, "half": dtypes.float16,
    "bfloat16": dtypes.bfloat16, "int64": dtypes.int64, "long": dtypes.int64,
    "int32": dtypes.int32, "int": dtypes.int32, "int16": dtypes.int16,
    "short": dtypes.int16, "int8": dtypes.int8, "uint8": dtypes.uint8, "bool": dtypes.bool,
    "complex64": dtypes.complex64, "cfloat": dtypes.complex64,
    "complex128": dtypes.complex128, "cdouble": dtypes.complex128,
}
_TENSOR_TYPE = _TypeMarker("torch.Tensor")
_PARAMETER_TYPE = _TypeMarker("torch.nn.parameter.Parameter")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class TorchZipReader:
    """One ``.pt`` zip archive: its storages (read or memory-mapped) and its pickle."""

    def __init__(self, zf: zipfile.ZipFile, place, mmap_array: np.ndarray | None,
                 file_size: int, mmap_base: int = 0):
        self.zf = zf
        self.mmap_base = mmap_base  # file position of mmap_array[0]
        self.place = place
        self.mmap_array = mmap_array
        self.file_size = file_size
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pkl) != 1:
            raise RuntimeError("not a PyTorch zip checkpoint: expected one <folder>/data.pkl, "
                               f"found {len(pkl)}")
        self.prefix = pkl[0][: -len("data.pkl")]
        byteorder = self._small(self.prefix + "byteorder", default=b"little")
        if byteorder not in (b"little", b"big"):
            raise RuntimeError(f"PyTorch checkpoint: unknown byteorder {byteorder[:20]!r}")
        self.swap = byteorder.decode() != _native_order()
        self.storages: dict = {}

    def _small(self, name: str, default: bytes) -> bytes:
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            return default
        if info.file_size > 64:
            raise RuntimeError(f"PyTorch checkpoint: {name} is {info.file_size} bytes")
        return self.zf.read(name).strip()

    def load(self, weights_only: bool):
        info = self.zf.getinfo(self.prefix + "data.pkl")
        self._check_size(info)
        data = self.zf.read(info)
        return unpickle(data, self.persistent_load, weights_only, self.globals())

    def _check_size(self, info: zipfile.ZipInfo) -> None:
        # A compressed entry may claim any size; torch never compresses, so refuse bombs.
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > 64 * (
                self.file_size + (1 << 20)):
            raise RuntimeError(f"PyTorch checkpoint: entry {info.filename} claims "
                               f"{info.file_size} bytes, far more than the file holds")

    def globals(self) -> dict:
        table = {
            "torch._utils._rebuild_tensor_v2": self.rebuild_tensor_v2,
            "torch._utils._rebuild_tensor": self.rebuild_tensor,
            "torch._utils._rebuild_parameter": _rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
            "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
            "torch.Tensor": _TENSOR_TYPE,
            "torch.nn.parameter.Parameter": _PARAMETER_TYPE,
            "torch.Size": Size,
            "torch.device": Device,
        }
        for name, dtype in _STORAGE_DTYPES.items():
            table["torch." + name] = _StorageType(name, dtype)
        for name, dtype in _TORCH_DTYPES.items():
            table["torch." + name] = dtype
        return table

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise UnpicklingError(f"PyTorch checkpoint: unsupported persistent id {pid!r:.80}")
        _, stype, key, location, numel = pid
        if not (isinstance(stype, _StorageType) and isinstance(key, str)
                and isinstance(location, str) and _is_int(numel) and numel >= 0):
            raise UnpicklingError(f"PyTorch checkpoint: bad storage reference {pid!r:.80}")
        if key in self.storages:
            return self.storages[key]
        name = f"{self.prefix}data/{key}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise UnpicklingError(f"PyTorch checkpoint: storage {name} is missing") from None
        np_dtype = stype.dtype.np_dtype
        if info.file_size != numel * np_dtype.itemsize:
            raise UnpicklingError(
                f"PyTorch checkpoint: storage {name} holds {info.file_size} bytes, but "
                f"{numel} elements of {stype.dtype} need {numel * np_dtype.itemsize}")
        self._check_size(info)
        raw = self._read_entry(info)
        array = raw.view(np_dtype)
        if self.swap:
            array = array.byteswap()
        storage = _Storage(array, location)
        self.storages[key] = storage
        return storage

    def _read_entry(self, info: zipfile.ZipInfo) -> np.ndarray:
        if self.mmap_array is not None and info.compress_type == zipfile.ZIP_STORED:
            start = _data_offset(self.mmap_array, info, self.mmap_base)
            return self.mmap_array[start:start + info.file_size]
        out = np.empty(info.file_size, dtype=np.uint8)
        with self.zf.open(info) as src:
            pos = 0
            while pos < info.file_size:
                got = src.readinto(memoryview(out[pos:]))
                if not got:
                    raise UnpicklingError(f"PyTorch checkpoint: {info.filename} is truncated")
                pos += got
        return out

    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False,
                          backward_hooks=None, metadata=None):
        t = self.rebuild_tensor(storage, storage_offset, size, stride)
        if requires_grad is True:
            t.requires_grad_(True)
        return t

    def rebuild_tensor(self, storage, storage_offset, size, stride):
        if not isinstance(storage, _Storage):
            raise UnpicklingError("PyTorch checkpoint: a tensor without a storage")
        if not (_is_int(storage_offset) and storage_offset >= 0
                and isinstance(size, tuple) and isinstance(stride, tuple)
                and len(size) == len(stride) <= _MAX_DIMS
                and all(_is_int(n) and n >= 0 for n in size)
                and all(_is_int(s) and s >= 0 for s in stride)):
            raise UnpicklingError(f"PyTorch checkpoint: bad tensor geometry (offset "
                                  f"{storage_offset!r:.40}, size {size!r:.80}, stride "
                                  f"{stride!r:.80})")
        array = storage.array
        numel = 1
        for n in size:
            numel *= n
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if numel and last >= len(array):
            raise UnpicklingError(
                f"PyTorch checkpoint: a tensor of size {list(size)} and stride {list(stride)} "
                f"at offset {storage_offset} reaches past its storage of {len(array)} "
                "elements")
        item = array.itemsize
        if numel:
            view = np.ndarray(size, dtype=array.dtype, buffer=array,
                              offset=storage_offset * item, strides=[s * item for s in stride])
        else:
            view = np.empty(size, dtype=array.dtype)
        return self.place(_make(view), storage.location)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    if not isinstance(data, Tensor):
        raise UnpicklingError("PyTorch checkpoint: a Parameter without tensor data")
    return Parameter(data, requires_grad=requires_grad is True)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks=None, state=None):
    # NOTE: Python attributes PyTorch kept on the Parameter (`state`) are dropped.
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _rebuild_from_type_v2(func, new_type, args, state):
    if new_type not in (_TENSOR_TYPE, _PARAMETER_TYPE) or not isinstance(args, tuple):
        raise UnpicklingError("PyTorch checkpoint: unsupported tensor subclass")
    out = func(*args)
    if not isinstance(out, Tensor):
        raise UnpicklingError("PyTorch checkpoint: rebuild did not give a tensor")
    if new_type is _PARAMETER_TYPE:
        return _rebuild_parameter(out, out.requires_grad)
    return out


def _data_offset(mapped: np.ndarray, info: zipfile.ZipInfo, base: int) -> int:
    """Where an uncompressed entry's bytes start in `mapped` (after its local header)."""
    at = info.header_offset - base
    head = bytes(mapped[at:at + 30])
    if at < 0 or len(head) != 30 or head[:4] != ZIP_MAGIC:
        raise RuntimeError(f"PyTorch checkpoint: bad local header for {info.filename}")
    start = at + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30],
                                                                            "little")
    if start + info.file_size > len(mapped):
        raise RuntimeError(f"PyTorch checkpoint: {info.filename} runs past the end of the file")
    return start


def _native_order() -> str:
    import sys

    return sys.byteorder


def open_zip(source) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise RuntimeError(f"not a valid zip archive (truncated or corrupt?): {exc}") from None
