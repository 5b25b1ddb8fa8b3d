"""The per-user folder of compiled kernels (ops/_native_cache.py): any copy of the same
ember code loads the builds another copy made; an edited file gets a folder of its own;
numba's own settings still win."""

import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import ember
from ember.ops import _native, _native_binary, _native_cache

pytestmark = pytest.mark.skipif(not _native.available(), reason="needs numba")

PACKAGE = os.path.dirname(ember.__file__)

# Runs `_native_binary._add`'s serial build and prints where it came from.
PROBE = textwrap.dedent("""
    import numpy as np
    import ember
    from ember.ops import _native_binary as b
    x = np.ones(8)
    b._add.serial(x, x, np.empty(8))
    stats = b._add._serial.stats
    print("origin", ember.__file__)
    print("hits", sum(stats.cache_hits.values()), "misses", sum(stats.cache_misses.values()))
""")


def _copy_of_ember(where) -> str:
    """A copy of the package's source (no compiled files) under `where`, as a fresh
    clone would have it."""
    shutil.copytree(PACKAGE, os.path.join(where, "ember"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return str(where)


def _probe(tree, cache, **env) -> tuple:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("NUMBA_CACHE_DIR", "EMBER_NO_NUMBA")}
    environment.update(PYTHONPATH=tree, EMBER_KERNEL_CACHE=str(cache), **env)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=environment, cwd=tree, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["origin"].startswith(tree)
    words = lines["hits"].split()
    return int(words[0]), int(words[2])


def test_a_fresh_copy_of_the_same_code_loads_the_builds_of_another(tmp_path):
    first = _copy_of_ember(tmp_path / "clone1")
    second = _copy_of_ember(tmp_path / "clone2")
    edited = _copy_of_ember(tmp_path / "clone3")
    with open(os.path.join(edited, "ember", "ops", "_native_binary.py"), "a") as f:
        f.write("\n# an edit\n")
    cache = tmp_path / "kernels"
    assert _probe(first, cache) == (0, 1)    # compiled
    assert _probe(second, cache) == (1, 0)   # loaded: the first copy's build
    assert _probe(edited, cache) == (0, 1)   # compiled again, in a folder of its own
    folders = list((cache / "ember" / "ops").glob("_native_binary-*"))
    assert len(folders) == 2 and all(list(f.glob("*.nbi")) for f in folders)
    assert not list(tmp_path.rglob("__pycache__/*.nbi"))   # (nothing next to the source)


def _locator_of(py_func):
    """The cache locator numba picks for `py_func`."""
    numba = _native._load_numba()
    return numba.core.caching.FunctionCache(py_func)._impl.locator


def test_the_packages_kernels_get_the_folder_and_numbas_setting_still_wins(tmp_path,
                                                                            monkeypatch):
    numba = _native._load_numba()
    monkeypatch.setenv("EMBER_KERNEL_CACHE", str(tmp_path / "kernels"))
    ours = _locator_of(_native_binary._add.py_func)
    assert getattr(ours, "ember_package_locator", False)
    assert ours.get_cache_path().startswith(str(tmp_path / "kernels" / "ember" / "ops"))

    def outside(x):
        return x
    assert not getattr(_locator_of(outside), "ember_package_locator", False)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    theirs = _locator_of(_native_binary._add.py_func)
    assert not getattr(theirs, "ember_package_locator", False)
    assert theirs.get_cache_path().startswith(str(tmp_path / "numba"))


def test_folders_name_the_file_its_imports_and_their_content(tmp_path, monkeypatch):
    package = tmp_path / "src" / "ember"
    (package / "ops").mkdir(parents=True)
    source, consts, other = (package / "ops" / f"{n}.py" for n in ("kernels", "_consts",
                                                                    "other"))
    source.write_text("from ._consts import SCALE\nx = 1\n")
    consts.write_text("SCALE = 2.0\n")
    other.write_text("y = 1\n")
    monkeypatch.setattr(_native_cache, "_PACKAGE", str(package))
    monkeypatch.setenv("EMBER_KERNEL_CACHE", str(tmp_path / "cache"))
    folder = _native_cache.folder_for(str(source))
    parent, name = os.path.split(folder)
    assert parent == str(tmp_path / "cache" / "ember" / "ops")
    stem, digest = name.rsplit("-", 1)
    assert stem == "kernels" and len(digest) == 16

    def edit(path, text, stamp):
        path.write_text(text)
        os.utime(path, (stamp, stamp))   # (digests are remembered per mtime and size)
        return _native_cache.folder_for(str(source))
    assert edit(other, "y = 2\n", 1) == folder           # a file it does not import
    assert edit(consts, "SCALE = 3.0\n", 2) != folder    # a number its kernels may read
    folder = _native_cache.folder_for(str(source))
    assert edit(source, "from ._consts import SCALE\nx = 2\n", 3) != folder
    assert _native_cache.folder_for(str(tmp_path / "elsewhere.py")) is None
    assert _native_cache.folder_for(__file__) is None


def test_the_files_a_module_imports_from_are_found():
    ops = os.path.join(PACKAGE, "ops")
    path = os.path.realpath(os.path.join(ops, "_native_group_norm.py"))
    st = os.stat(path)
    found = {os.path.relpath(f, PACKAGE) for f in
             _native_cache._imported_files(path, st.st_mtime, st.st_size)}
    assert found == {os.path.join("ops", n) for n in ("_native.py", "_native_activation.py",
                                                      "_native_rows.py")}


def test_only_the_newest_versions_of_a_file_are_kept(tmp_path):
    ops = tmp_path / "ember" / "ops"
    for age, name in enumerate(["rows-a", "rows-b", "rows-c", "rows-d", "rows-e",
                                "rows_more-f"]):
        (ops / name).mkdir(parents=True)
        os.utime(ops / name, (1000 - age, 1000 - age))   # rows-a the newest
    _native_cache.prune(str(ops / "rows-e"), keep=3)
    assert sorted(p.name for p in ops.iterdir()) == ["rows-a", "rows-b", "rows-e",
                                                     "rows_more-f"]


def test_installing_twice_adds_one_locator():
    numba = _native._load_numba()
    impl = getattr(numba.core.caching, "CacheImpl", None) or numba.core.caching._CacheImpl
    _native_cache.install(numba)
    ours = [c for c in impl._locator_classes if getattr(c, "ember_package_locator", False)]
    assert len(ours) == 1


def test_a_folder_that_cannot_be_made_leaves_numbas_default(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("EMBER_KERNEL_CACHE", str(blocker / "kernels"))  # (under a file)
    locator = _locator_of(_native_binary._add.py_func)
    assert not getattr(locator, "ember_package_locator", False)
    assert not str(locator.get_cache_path()).startswith(str(blocker))


def test_without_a_home_folder_numbas_default_applies(monkeypatch):
    monkeypatch.delenv("EMBER_KERNEL_CACHE", raising=False)
    monkeypatch.setattr(_native_cache.os.path, "expanduser", lambda path: path)
    assert _native_cache.cache_root() is None
    assert _native_cache.folder_for(_native_binary.__file__) is None
    monkeypatch.setenv("EMBER_KERNEL_CACHE", "/somewhere/kernels")
    assert _native_cache.folder_for(_native_binary.__file__).startswith("/somewhere/kernels/")


def test_the_import_lines_give_what_a_full_parse_finds_in_every_package_file():
    # (`_from_imports` parses the import lines alone, for speed: checked here against
    # walking each whole file's syntax tree; it may also take a docstring's example)
    import ast

    for path in sorted(glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        full = [ast.dump(n) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom)]
        lines = [ast.dump(n) for n in _native_cache._from_imports(text)]
        assert set(full) <= set(lines), path
