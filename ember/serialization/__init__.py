"""Saving and loading: ``ember.save`` / ``ember.load``.

**What can be saved.**  Tensors, Parameters, NumPy arrays, and any nesting of dicts,
OrderedDicts, lists, tuples, sets of them with numbers, strings, bytes, bools, None,
dtypes, devices and Sizes: module, optimizer and scheduler state dicts and whole
training checkpoints.  Tensors come back as Tensors (Parameters as Parameters, as in
PyTorch; a module's ``state_dict()`` holds plain tensors), keeping ``requires_grad``;
NumPy arrays come back as NumPy arrays.  Tensors that shared memory when saved (the same
tensor twice, views of one another, tied weights) are stored once and share memory again
after loading.  Other objects (``ember.save(model)``, a user's config class) are pickled
into the same file; their tensors still go to the tensor section.

**The file** is a safetensors file (``[u64 header length][JSON header][raw bytes]``),
written and read by the ``safetensors`` library, so any safetensors reader
(``safetensors.numpy.load_file``, Hugging Face tools) reads our tensors under their
state-dict names, and ``ember.load`` reads ``.safetensors`` files written by others (as a
dict of tensors).  In the header's ``__metadata__`` we add ``"format": "pt"``,
``"ember.format"``, the structure of the saved object as JSON (``_structure.py`` lists the
tags) and checksums, verified on load (SHA-256 of the header; CRC-32 of every 1 MiB of
every entry, under SHA-256: see ``_format.py``).  Tensors that share memory with others
are stored as one entry (the widest of them, or the bytes spanning them) and only that
entry is visible to other readers.  complex128 tensors, which the safetensors spec lacks,
are stored as float64 with a trailing dimension of 2.

**Safety.**  With ``weights_only=True`` (the default, as in PyTorch 2.6+) loading never
runs code from the file: the structure is plain JSON, and a pickled part is read by an
unpickler that resolves only allow-listed globals (``add_safe_globals``,
``safe_globals``); anything else raises ``UnpicklingError`` naming the global.
``weights_only=False`` unpickles anything (only for files you trust).  Broken or hostile
files (truncated, corrupt, lying headers, raw pickles) raise ``FormatError`` (both a
``pickle.UnpicklingError``, as PyTorch raises for such files, and a ``ValueError``),
``RuntimeError`` or ``UnpicklingError`` saying what is wrong, before any large allocation.

**PyTorch files.**  ``ember.load`` also reads the zip files ``torch.save`` writes (not the
legacy pre-1.6 format): tensors, Parameters and plain containers, through the same
restricted unpickler, so PyTorch weights can be loaded into ember models.

**Atomic saves.**  Saving to a path writes a temporary file next to it, fsyncs it and
renames it over the target (see ``_atomic.py``): a crash leaves the old file whole.
Saving to a file object writes to it directly.

**mmap=True** maps the file instead of reading it: tensors are copy-on-write views of
the mapping (writable; writes stay in memory and never reach the file), and only the
header checksum is verified, since checking the data would read all of it.  (A file
object positioned inside a file is the exception: the library then validates the header
from the mapped bytes, which reads them once.)
"""

from __future__ import annotations

import io
import json
import os
import pickle

import numpy as np

from .._core.backend import cuda_available
from .._core.device import device as Device
from .._core.tensor import Tensor, _make
from . import _format, _structure, _torch_zip
from ._atomic import atomic_write
from ._format import FormatError
from ._restricted_pickle import (
    UnpicklingError, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals,
    unpickle,
)
from .._core import dtype as dtypes

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "UnpicklingError", "FormatError", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 4
# "2": laid out by the safetensors library, checksums per entry; "1": earlier embers
# (same structure JSON).  An older ember then says a newer one wrote the file.
FORMAT_VERSION = "2"
READABLE_FORMATS = ("1", "2")
_LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0a"


def save(obj, f, pickle_module=pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save `obj` to `f`, a path (written atomically) or a writable binary file object.

    The file is a safetensors file with the object's structure in its metadata (see the
    module docstring).  `pickle_module` and `pickle_protocol` are used for the parts that
    must be pickled (objects other than tensors, arrays, containers and plain values);
    the two underscored arguments exist for PyTorch compatibility and are ignored.

    >>> ember.save({"epoch": 3, "model": model.state_dict()}, "ckpt.pt")
    """
    encoder = _structure.Encoder(pickle_module, pickle_protocol)
    try:
        node = encoder.encode(obj)
    except _structure._CyclicError:  # a container holds itself: pickle handles cycles
        encoder = _structure.Encoder(pickle_module, pickle_protocol)
        node = encoder._pickle(obj, "")
    entries = encoder.finish()
    structure = json.dumps(node, separators=(",", ":"), allow_nan=False)
    metadata = {"format": "pt", "ember.format": FORMAT_VERSION}
    if isinstance(f, (str, bytes, os.PathLike)):
        with atomic_write(f) as temporary_path:
            _format.write(temporary_path, entries, metadata, structure)
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"ember.save: expected a path or a writable binary file, got "
                                 f"{type(f).__name__}")
        _format.write(f, entries, metadata, structure)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args):
    """Load an object saved with ``ember.save``, a ``.safetensors`` file or a PyTorch ``.pt``.

    Args:
        f: a path or a readable binary file object.
        map_location: where tensors go: None (where they were saved), a device or
            device string (all of them), a dict mapping saved locations to new ones
            (``{"cuda:1": "cuda:0"}``), or a function ``fn(tensor, location)``, called
            once per tensor (PyTorch: per storage) with the tensor on the CPU and its saved
            location string, returning the tensor to use (or None for the default).
        weights_only: True (default) never runs code from the file; pickled objects load
            only if their classes are allow-listed (see ``add_safe_globals``).  False
            unpickles anything: only for files you trust.
        mmap: map the file instead of reading it (copy-on-write tensors; needs a path or
            a real file; only the header checksum is checked).

    A ``.safetensors`` file written by another tool loads as a dict of tensors.

    >>> model.load_state_dict(ember.load("model.safetensors"))
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is not None and pickle_module is not pickle and weights_only:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified; pass weights_only=False to use it")
    if pickle_load_args:
        raise TypeError(f"ember.load: unexpected arguments {sorted(pickle_load_args)}")
    place = _placer(map_location)
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_file(fh, place, weights_only, bool(mmap), os.fspath(f))
    if not hasattr(f, "read"):
        raise AttributeError(f"ember.load: expected a path or a readable binary file, got "
                             f"{type(f).__name__}")
    return _load_file(f, place, weights_only, bool(mmap), None)


def _load_file(fh, place, weights_only: bool, mmap: bool, path):
    start, total = _position_and_size(fh)
    head = fh.read(8)
    if not isinstance(head, bytes):
        raise TypeError("ember.load: the file must be opened in binary mode")
    mapped = None
    if mmap:
        if start is None:
            raise RuntimeError("ember.load(mmap=True) needs a path or a real file")
        mapped = _map(fh if path is None else path, start, total)
    if head[:4] == _torch_zip.ZIP_MAGIC:
        return _load_torch_zip(fh, head, start, total, place, weights_only, mapped)
    if head[:4] == _LEGACY_TORCH_MAGIC:
        raise RuntimeError("this is a PyTorch file in the legacy (pre-1.6, non-zip) format, "
                           "which ember cannot read; re-save it with a recent torch.save")
    whole = _whole_file(fh, path, start)
    try:
        if mapped is not None:
            container = _format.map_container(mapped, whole)
        elif whole is not None:
            container = _format.read_path(whole)
            fh.seek(start + total)  # end as if read through `fh`
        else:
            container = _format.read_bytes(head + fh.read())
    except FormatError:
        if head[:1] == b"\x80" and 2 <= head[1] <= 5:
            raise FormatError("this file is a raw pickle (pickle.dump, or torch.save with "
                              "_use_new_zipfile_serialization=False), not an ember, "
                              "safetensors or PyTorch zip file; ember does not load raw "
                              "pickles") from None
        raise
    if not container.is_ember:
        return _foreign(container, place)
    return _load_ember(container, place, weights_only)


def _whole_file(fh, path, start):
    """The path of the file `fh` reads, when the container fills it from its first byte
    (then the safetensors library reads it by path), else None."""
    if start != 0:
        return None
    if path is not None:
        return os.fsdecode(path)
    raw = fh.raw if isinstance(fh, (io.BufferedReader, io.BufferedRandom)) else fh
    name = getattr(raw, "name", None)
    if type(raw) is not io.FileIO or not isinstance(name, (str, bytes)):
        return None  # a wrapper such as GzipFile: its name is not that of the bytes it reads
    try:
        same = os.path.samestat(os.fstat(raw.fileno()), os.stat(name))
    except (OSError, ValueError):
        return None
    return os.fsdecode(name) if same else None


def _position_and_size(fh):
    try:
        start = fh.tell()
        end = fh.seek(0, os.SEEK_END)
        fh.seek(start)
        return start, end - start
    except (AttributeError, OSError, ValueError):
        return None, None


def _map(source, start: int, total: int) -> np.ndarray:
    if total == 0:
        raise FormatError("the file is empty")
    try:
        return np.memmap(source, dtype=np.uint8, mode="c", offset=start, shape=(total,))
    except (OSError, ValueError, TypeError) as exc:
        raise RuntimeError(f"ember.load(mmap=True): cannot map the file: {exc}") from None


def _load_ember(container, place, weights_only: bool):
    version = container.metadata.get("ember.format")
    if version not in READABLE_FORMATS:
        raise FormatError(f"this file has ember format {version!r:.20}; this ember reads "
                          f"formats {', '.join(READABLE_FORMATS)} (a newer ember wrote it?)")
    container.verify()
    try:
        node = json.loads(container.metadata["ember.structure"])
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"the structure in the header is not valid JSON: {exc}") from None

    def unpickle_part(data, persistent_load):
        return unpickle(data, persistent_load, weights_only)

    decoder = _structure.Decoder(container, place, unpickle_part)
    try:
        return decoder.decode(node)
    except (FormatError, UnpicklingError):
        raise
    except RecursionError:
        raise FormatError("the structure is nested too deeply") from None
    except (TypeError, ValueError, OverflowError, IndexError, KeyError) as exc:
        raise FormatError(f"corrupt structure in the file ({type(exc).__name__}: {exc})") \
            from exc


def _foreign(container, place) -> dict:
    """A safetensors file from another tool: a dict of tensors by name, in file order."""
    out = {}
    for name in container.table:
        array = container.entry(name)
        if not dtypes.is_known_numpy(array.dtype):
            raise FormatError(f"entry {name!r} has dtype {array.dtype}, which ember does not "
                              "have")
        out[name] = place(_make(array), "cpu")
    return out


def _load_torch_zip(fh, head: bytes, start, total, place, weights_only: bool, mapped):
    if start is not None:
        fh.seek(start)
        source = fh
    else:  # a stream: zip needs to seek, so read it whole
        source = io.BytesIO(head + fh.read())
    zf = _torch_zip.open_zip(source)
    try:
        with zf:
            reader = _torch_zip.TorchZipReader(zf, place, mapped, total or 0, start or 0)
            return reader.load(weights_only)
    except (UnpicklingError, RuntimeError, ValueError):
        raise
    except Exception as exc:  # zipfile's BadZipFile (bad CRC...), EOFError, ...
        raise RuntimeError(f"PyTorch checkpoint is corrupt: {type(exc).__name__}: "
                           f"{exc}") from exc


def _placer(map_location):
    """The function that moves each loaded tensor where `map_location` says."""
    if map_location is not None and not isinstance(
            map_location, (str, Device, dict)) and not callable(map_location):
        raise TypeError(f"map_location should be a str, device, dict or callable, got "
                        f"{type(map_location).__name__}")

    def place(t: Tensor, saved: str) -> Tensor:
        if map_location is None:
            target = saved
        elif isinstance(map_location, (str, Device)):
            target = map_location
        elif isinstance(map_location, dict):
            target = map_location.get(saved, saved)
        else:
            result = map_location(t, saved)
            if result is None:
                target = saved
            elif isinstance(result, Tensor):
                return result
            else:
                raise TypeError("map_location function must return a tensor or None, got "
                                f"{type(result).__name__}")
        if target == "cpu" or target is _CPU:
            return t
        try:
            dev = Device(target)
        except (RuntimeError, ValueError, TypeError):
            raise FormatError(f"tensor saved on unknown device {target!r:.40}; pass "
                              "map_location='cpu'") from None
        if dev.type == "cpu":
            return t
        if dev.type == "cuda":
            if not cuda_available():
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but "
                    "ember.cuda.is_available() is False. If you are running on a CPU-only "
                    "machine, please use ember.load with map_location='cpu' to map your "
                    "storages to the CPU.")
        return t.to(dev)

    return place


_CPU = Device("cpu")
