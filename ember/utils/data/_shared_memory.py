"""How a batch travels from a worker process to the main process.

A batch is pickled with every large NumPy array (and so every large tensor, which pickles
as its array) taken out of the pickle stream.  The arrays then go one of two ways:

- shared memory, when they add up to at least `MIN_SHM_BYTES`: the worker copies them
  into a POSIX shared-memory segment (what ``multiprocessing.shared_memory`` uses
  underneath) and sends only its name; the main process maps the segment and wraps the
  arrays around the mapping, without a copy;
- the pipe, otherwise: each array's raw bytes follow the pickle on the worker's pipe and
  are read straight into the buffer the main-process array will own.

Segments are recycled.  Making a fresh one costs a page fault and a zero-fill per 4 KiB
page (measured here: ~12 ms for 16 MiB, ten times the copy itself), so when the last
array of a batch dies in the main process, a finalizer tells the worker, which then
reuses the segment (still mapped on both sides) for a later batch.  `benchmarks/
dataloader.py` measures both routes and a plain pickle; `MIN_SHM_BYTES` comes from it.

Segment names start with ``ember_dl_<main pid>_<pool>_``: when a pool shuts down the main
process removes every name with its prefix (`unlink_leftovers`), which also covers a
worker killed half-way through a segment; mappings still held by live arrays stay valid.
When a segment cannot be made (no /dev/shm, or it is full: the space is reserved with
``posix_fallocate`` so a full /dev/shm fails here instead of killing the worker with
SIGBUS on a later write) the worker falls back to the pipe for good and says why, once.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import weakref

import numpy as np

try:
    import _posixshmem
except ImportError:  # Windows: batches always travel through the pipe
    _posixshmem = None

NAME_PREFIX = "ember_dl_"
# Arrays smaller than this stay inside the pickle (the bookkeeping would cost more).
MIN_ARRAY_BYTES = 16 * 1024
# A batch whose large arrays add up to this much travels through shared memory.  Measured
# with recycled segments (benchmarks/dataloader.py): shared memory is already ahead of the
# pipe at 16 KiB (86 vs 95 us per batch), 1.9x at 128 KiB, 7x at 1 MiB and above; below
# 16 KiB all routes cost the same, as the arrays stay in the pickle.
MIN_SHM_BYTES = 16 * 1024
# Released segments a worker keeps mapped for reuse.
MAX_FREE_SEGMENTS = 4
_ALIGN = 64
_SIZE_STEP = 64 * 1024          # segment sizes are rounded up, so similar batches share
# NOTE: pre-faulting a whole mapping in one call is much cheaper than one page fault per
# 4 KiB page on first touch.
_MAP_FLAGS = getattr(mmap, "MAP_SHARED", 0) | getattr(mmap, "MAP_POPULATE", 0)
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


def _create_segment(name: str, size: int) -> mmap.mmap:
    """Make segment `name` of `size` bytes, space reserved, and map it (worker side)."""
    fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            else:
                os.ftruncate(fd, size)
            return mmap.mmap(fd, size, flags=_MAP_FLAGS)
        finally:
            os.close(fd)
    except BaseException:
        _posixshmem.shm_unlink("/" + name)
        raise


def _attach_segment(name: str) -> mmap.mmap:
    """Map an existing segment (main side)."""
    fd = _posixshmem.shm_open("/" + name, os.O_RDWR, 0o600)
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size, flags=_MAP_FLAGS)
    finally:
        os.close(fd)


def _unlink(name: str) -> None:
    try:
        _posixshmem.shm_unlink("/" + name)
    except OSError:
        pass


class Sender:
    """The worker's end: sends (header, payload) messages on one pipe connection, and
    keeps the segments it made (in flight, or released and free for reuse)."""

    def __init__(self, conn, prefix: str, use_shm: bool = True):
        self.conn = conn
        self.prefix = prefix
        self.use_shm = use_shm and available()
        self.count = 0
        self.in_flight: dict = {}     # name -> mmap, sent and not yet released
        self.free: list = []          # (size, name, mmap) released, reusable
        self.retired: list = []       # names unlinked since the last message
        self.fallback_reason = None   # why shared memory was given up, reported once

    def _segment(self, size: int):
        """A free segment of a fitting size, or a new one."""
        for i, (seg_size, name, mm) in enumerate(self.free):
            if size <= seg_size <= 2 * size + _SIZE_STEP:
                del self.free[i]
                return name, mm
        name = f"{self.prefix}{self.count:x}"
        self.count += 1
        return name, _create_segment(name, -(-size // _SIZE_STEP) * _SIZE_STEP)

    def _to_shm(self, arrays: list, layout: list, total: int):
        try:
            name, mm = self._segment(total)
        except OSError as exc:
            self.use_shm = False
            self.fallback_reason = f"{type(exc).__name__}: {exc}"
            return None
        for a, (dtype, shape, offset, _) in zip(arrays, layout):
            dst = np.frombuffer(mm, dtype=dtype, count=a.size, offset=offset).reshape(shape)
            np.copyto(dst, a, casting="no")
            del dst
        self.in_flight[name] = mm
        return ("shm", name, layout)

    def release(self, name: str) -> None:
        """The main process no longer uses segment `name`: keep it for reuse."""
        mm = self.in_flight.pop(name, None)
        if mm is None:
            return
        self.free.append((len(mm), name, mm))
        if len(self.free) > MAX_FREE_SEGMENTS:
            _, old_name, old_mm = self.free.pop(0)
            old_mm.close()
            _unlink(old_name)
            self.retired.append(old_name)

    def send(self, header: tuple, payload) -> None:
        buf = io.BytesIO()
        pickler = _Pickler(buf, MIN_ARRAY_BYTES)
        pickler.dump(payload)
        arrays = pickler.arrays
        layout, total = _layout(arrays)
        route = None
        if arrays and self.use_shm and total >= MIN_SHM_BYTES:
            route = self._to_shm(arrays, layout, total)
        if route is None and arrays:
            route = ("pipe", layout)
        note, self.fallback_reason = self.fallback_reason, None
        retired, self.retired = self.retired, []
        self.conn.send_bytes(pickle.dumps((header, route, note, retired),
                                          protocol=pickle.HIGHEST_PROTOCOL))
        self.conn.send_bytes(buf.getbuffer())
        if route is not None and route[0] == "pipe":
            for a in arrays:
                self.conn.send_bytes(np.ascontiguousarray(a).reshape(-1).view(np.uint8))

    def close(self) -> None:
        """Unmap everything (the names are the main process's to remove)."""
        for mm in self.in_flight.values():
            mm.close()
        for _, _, mm in self.free:
            mm.close()
        self.in_flight.clear()
        self.free.clear()


class Receiver:
    """The main process's end of one worker's pipe.

    It maps each segment once and keeps the mapping while the worker may reuse the
    segment.  A batch's arrays are views of one per-batch anchor array over the mapping
    (NumPy keeps every view's ``base`` pointing at it), so a finalizer on the anchor
    learns when the last of them is gone and calls ``on_free(name)``.
    """

    def __init__(self, conn, on_free):
        self.conn = conn
        self.on_free = on_free
        self.mappings: dict = {}

    def receive(self):
        """One message -> (header, payload, fallback note or None)."""
        header, route, note, retired = pickle.loads(self.conn.recv_bytes())
        for name in retired:
            self.mappings.pop(name, None)   # live arrays keep their mapping alive
        body = self.conn.recv_bytes()
        arrays = []
        if route is not None and route[0] == "shm":
            name = route[1]
            mm = self.mappings.get(name)
            if mm is None:
                mm = self.mappings[name] = _attach_segment(name)
            anchor = np.frombuffer(mm, dtype=np.uint8)
            arrays = [anchor[offset:offset + nbytes].view(dtype).reshape(shape)
                      for dtype, shape, offset, nbytes in route[2]]
            weakref.finalize(anchor, self.on_free, name).atexit = False
            del anchor
        elif route is not None:
            for dtype, shape, _, nbytes in route[1]:
                raw = bytearray(nbytes)
                self.conn.recv_bytes_into(raw)
                arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape))
        return header, _Unpickler(io.BytesIO(body), arrays).load(), note

    def close(self) -> None:
        self.mappings.clear()


def unlink_leftovers(prefix: str) -> int:
    """Remove every segment whose name starts with `prefix`; returns how many."""
    if _posixshmem is None or not os.path.isdir(_SHM_DIR):
        return 0
    removed = 0
    for name in os.listdir(_SHM_DIR):
        if name.startswith(prefix):
            _unlink(name)
            removed += 1
    return removed


def leftovers(prefix: str = NAME_PREFIX) -> list:
    """Names of segments in /dev/shm that start with `prefix` (for tests)."""
    if not os.path.isdir(_SHM_DIR):
        return []
    return sorted(n for n in os.listdir(_SHM_DIR) if n.startswith(prefix))
