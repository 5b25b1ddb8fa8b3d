"""How a batch travels from a worker process to the main process.

A batch is pickled with every large NumPy array (and so every large tensor, which pickles
as its array) taken out of the pickle stream.  The arrays then go one of two ways:

- shared memory: when they add up to at least `MIN_SHM_BYTES`, the worker copies them
  into one fresh POSIX shared-memory segment (what ``multiprocessing.shared_memory``
  uses underneath) and sends only its name; the main process maps it, unlinks the name at
  once and wraps the arrays around the mapping, so the memory lives exactly as long as
  the arrays do and nothing is left in /dev/shm;
- the pipe: otherwise, each array's raw bytes follow the pickle on the worker's pipe and
  are read straight into the buffer the main-process array will own (no pickle copy).

`benchmarks/dataloader.py` measures both ways against each other and against a plain
pickle; the thresholds below come from it.  Segment names start with
``ember_dl_<main pid>_<pool>_`` so the main process can remove what a killed worker
leaves behind (`unlink_leftovers`).  When a segment cannot be made (no /dev/shm, or it is
full: the space is reserved with ``posix_fallocate`` so a full /dev/shm fails here
instead of killing the worker with SIGBUS later) the sender falls back to the pipe for
good and says why, once.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle

import numpy as np

try:
    import _posixshmem
except ImportError:  # Windows: batches always travel through the pipe
    _posixshmem = None

NAME_PREFIX = "ember_dl_"
# Arrays smaller than this stay inside the pickle (the bookkeeping would cost more).
MIN_ARRAY_BYTES = 16 * 1024
# A batch whose large arrays add up to this much travels through shared memory.
MIN_SHM_BYTES = 256 * 1024
_ALIGN = 64
_SHM_DIR = "/dev/shm"


def available() -> bool:
    """Whether POSIX shared memory can be used on this platform at all."""
    return _posixshmem is not None


def pool_prefix(pool_id: int) -> str:
    """The name prefix of every segment made for one worker pool of this process."""
    return f"{NAME_PREFIX}{os.getpid():x}_{pool_id:x}_"


class _Pickler(pickle.Pickler):
    def __init__(self, file, min_bytes: int):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.min_bytes = min_bytes
        self.arrays: list = []

    def persistent_id(self, obj):
        if (type(obj) is np.ndarray and obj.nbytes >= self.min_bytes
                and not obj.dtype.hasobject):
            self.arrays.append(obj)
            return len(self.arrays) - 1
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, arrays: list):
        super().__init__(file)
        self.arrays = arrays

    def persistent_load(self, pid):
        return self.arrays[pid]


def _layout(arrays: list):
    """(dtype, shape, offset, nbytes) per array, offsets aligned; and the total size."""
    layout, offset = [], 0
    for a in arrays:
        layout.append((a.dtype, a.shape, offset, a.nbytes))
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    return layout, offset


def _create_segment(name: str, size: int, arrays: list, layout: list) -> None:
    """Make segment `name` of `size` bytes and copy `arrays` into it (worker side)."""
    fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            else:
                os.ftruncate(fd, size)
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
    except BaseException:
        _posixshmem.shm_unlink("/" + name)
        raise
    try:
        for a, (dtype, shape, offset, nbytes) in zip(arrays, layout):
            dst = np.frombuffer(mm, dtype=dtype, count=a.size, offset=offset).reshape(shape)
            np.copyto(dst, a, casting="no")
            del dst
    finally:
        mm.close()


def _attach_segment(name: str, layout: list) -> list:
    """Map segment `name`, remove its name, and return the arrays inside (main side)."""
    fd = _posixshmem.shm_open("/" + name, os.O_RDWR, 0o600)
    try:
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
        _posixshmem.shm_unlink("/" + name)
    return [np.frombuffer(mm, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)),
                          offset=offset).reshape(shape)
            for dtype, shape, offset, _ in layout]


class Sender:
    """The worker's end: sends (header, payload) messages on one pipe connection."""

    def __init__(self, conn, prefix: str, use_shm: bool = True):
        self.conn = conn
        self.prefix = prefix
        self.use_shm = use_shm and available()
        self.count = 0
        self.fallback_reason = None   # why shared memory was given up, reported once

    def send(self, header: tuple, payload) -> None:
        buf = io.BytesIO()
        pickler = _Pickler(buf, MIN_ARRAY_BYTES)
        pickler.dump(payload)
        arrays = pickler.arrays
        layout, total = _layout(arrays)
        route = None
        if arrays and self.use_shm and total >= MIN_SHM_BYTES:
            name = f"{self.prefix}{self.count:x}"
            self.count += 1
            try:
                _create_segment(name, total, arrays, layout)
                route = ("shm", name, layout)
            except OSError as exc:
                self.use_shm = False
                self.fallback_reason = f"{type(exc).__name__}: {exc}"
        if route is None and arrays:
            route = ("pipe", layout)
        note, self.fallback_reason = self.fallback_reason, None
        self.conn.send_bytes(pickle.dumps((header, route, note),
                                          protocol=pickle.HIGHEST_PROTOCOL))
        self.conn.send_bytes(buf.getbuffer())
        if route is not None and route[0] == "pipe":
            for a in arrays:
                self.conn.send_bytes(np.ascontiguousarray(a).reshape(-1).view(np.uint8))


def receive(conn):
    """The main process's end: one message -> (header, payload, fallback note or None)."""
    header, route, note = pickle.loads(conn.recv_bytes())
    body = conn.recv_bytes()
    arrays = []
    if route is not None and route[0] == "shm":
        arrays = _attach_segment(route[1], route[2])
    elif route is not None:
        for dtype, shape, _, nbytes in route[1]:
            raw = bytearray(nbytes)
            conn.recv_bytes_into(raw)
            arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape))
    return header, _Unpickler(io.BytesIO(body), arrays).load(), note


def unlink_leftovers(prefix: str) -> int:
    """Remove every segment whose name starts with `prefix`; returns how many."""
    if _posixshmem is None or not os.path.isdir(_SHM_DIR):
        return 0
    removed = 0
    for name in os.listdir(_SHM_DIR):
        if name.startswith(prefix):
            try:
                _posixshmem.shm_unlink("/" + name)
                removed += 1
            except OSError:
                pass
    return removed


def leftovers(prefix: str = NAME_PREFIX) -> list:
    """Names of segments in /dev/shm that start with `prefix` (for tests)."""
    if not os.path.isdir(_SHM_DIR):
        return []
    return sorted(n for n in os.listdir(_SHM_DIR) if n.startswith(prefix))
