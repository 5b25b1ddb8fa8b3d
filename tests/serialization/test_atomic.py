"""Saving to a path is atomic: a writer killed at any moment leaves a whole file."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest

import ember
from ember.serialization import _format

posix_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork and SIGKILL")


def generation(gen: int) -> dict:
    return {"gen": gen, "a": ember.full((512, 1024), float(gen)),
            "b": ember.full((3000,), gen, dtype=ember.int64), "meta": {"name": f"gen-{gen}"}}


def check_whole(path) -> int:
    out = ember.load(path)
    gen = out["gen"]
    assert (out["a"] == gen).all() and (out["b"] == gen).all()
    assert out["meta"]["name"] == f"gen-{gen}"
    return gen


def temp_files(folder, name="ckpt.pt"):
    return [e for e in os.listdir(folder) if e.startswith(f".{name}.tmp-")]


@posix_only
def test_sigkill_during_save_never_leaves_a_mixed_file(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save(generation(0), path)
    rng = random.Random(1234)
    last, interrupted = 0, 0
    for _ in range(30):
        pid = os.fork()
        if pid == 0:  # the child saves new generations over the file until killed
            try:
                gen = last + 1
                while True:
                    ember.save(generation(gen), path)
                    gen += 1
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.0, 0.06))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        interrupted += bool(temp_files(tmp_path))
        gen = check_whole(path)
        assert gen >= last
        last = gen
    assert interrupted >= 1, "no kill landed during a save; the test proves nothing"
    # The next successful save removes what the killed writers left behind.
    ember.save(generation(-1), path)
    assert temp_files(tmp_path) == []
    assert check_whole(path) == -1


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_are_cleaned(tmp_path):
    path = tmp_path / "ckpt.pt"
    dead = tmp_path / f".ckpt.pt.tmp-{_dead_pid()}-deadbeef"
    mine = tmp_path / f".ckpt.pt.tmp-{os.getpid()}-0000aaaa"
    live = tmp_path / f".ckpt.pt.tmp-{os.getppid()}-0000bbbb"
    other = tmp_path / f".other.pt.tmp-{_dead_pid()}-cafe0000"
    for p in (dead, mine, live, other):
        p.write_bytes(b"partial")
    ember.save(ember.ones(2), path)
    assert not dead.exists()
    assert mine.exists() and live.exists() and other.exists()


def test_failed_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save(generation(1), path)

    def broken_write(target, entries, metadata, structure):
        with open(target, "wb") as f:
            f.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(_format, "write", broken_write)
    with pytest.raises(OSError, match="disk full"):
        ember.save(generation(2), path)
    monkeypatch.undo()
    assert check_whole(path) == 1
    assert temp_files(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_saved_file_has_ordinary_permissions(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "w.pt"
    ember.save(ember.ones(1), path)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")
def test_overwrite_keeps_permissions_and_follows_symlinks(tmp_path):
    target = tmp_path / "epoch3.pt"
    ember.save(ember.ones(1), target)
    os.chmod(target, 0o600)
    link = tmp_path / "latest.pt"
    link.symlink_to(target.name)
    ember.save(ember.zeros(2), link)
    assert link.is_symlink()
    assert ember.load(target).tolist() == [0.0, 0.0]
    assert target.stat().st_mode & 0o777 == 0o600
