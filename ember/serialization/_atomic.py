"""Atomic file replacement: a crash mid-save leaves the previous file whole.

The new contents go to ``.<name>.tmp-<pid>-<random>`` in the target's folder (the
writer gets its path: the safetensors library writes files by name); once written and
fsynced, the temporary file is renamed over the target with
``os.replace`` (atomic on POSIX and Windows) and the folder is fsynced so the rename
itself survives a power cut.  Temporary files left by writers that were killed are
removed by the next successful save of the same path, once their process is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time

_STALE_AGE_S = 24 * 3600  # a temporary file untouched this long is stale whatever its pid


def _temp_prefix(name: str) -> str:
    return f".{name}.tmp-"


@contextlib.contextmanager
def atomic_write(path):
    """Yield the path of a temporary file to write; on success it replaces `path`
    atomically (after an fsync of its contents)."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    # Through a symlink, replace the file it points to (as writing in place would).
    path = os.path.realpath(path)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f"{_temp_prefix(name)}{os.getpid()}-{secrets.token_hex(4)}")
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)  # O_EXCL: the name is ours alone
    try:
        try:
            with contextlib.suppress(OSError):  # keep the permissions of the file we replace
                os.chmod(fd if os.chmod in os.supports_fd else tmp,
                         stat.S_IMODE(os.stat(path).st_mode))
            mode = stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
        yield tmp
        os.chmod(tmp, mode)  # the writer may have recreated the file with its own mode
        fd = os.open(tmp, os.O_RDWR | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)
    _remove_stale(folder, name)


def _fsync_folder(folder: str) -> None:
    if os.name != "posix":  # Windows cannot open a folder for fsync
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale(folder: str, name: str) -> None:
    """Delete temporary files of `name` whose writer process no longer exists."""
    prefix = _temp_prefix(name)
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid_text = entry[len(prefix):].split("-", 1)[0]
        full = os.path.join(folder, entry)
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue  # ours: another thread of this process may be writing it
        try:
            old = time.time() - os.stat(full).st_mtime > _STALE_AGE_S
        except OSError:
            continue
        if old or not _alive(int(pid_text)):
            with contextlib.suppress(OSError):
                os.unlink(full)


def _alive(pid: int) -> bool:
    if os.name != "posix":
        return True  # no cheap check: rely on the age rule
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except (PermissionError, OSError):
        return True
    return True
