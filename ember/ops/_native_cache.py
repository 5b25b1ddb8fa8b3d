"""Where numba keeps ember's compiled kernels on disk: one folder per user
(``~/.cache/ember/kernels``, or ``$EMBER_KERNEL_CACHE``), in which each kernel source
file of the package gets a folder named by its path inside the package and a hash of its
content and of the package files it imports from.  Any copy of the same ember code (a
fresh clone, a reinstall, a new virtual environment) then loads the machine code
compiled before instead of compiling it again.

NOTE: why.  numba's default keeps a build in the ``__pycache__`` folder next to its
source file, so a fresh clone or install starts from nothing: the test suite, run from a
clean clone on the 2-core test machines, spent 80-100 s of its 220-250 s compiling kernels
(docs/performance.md).  numba itself still checks each build against a hash of its source
file, its own version and the CPU, and the folder's name changes with the content of
the file and of the files it imports from, so two checkouts of different code never share
a build.

``NUMBA_CACHE_DIR`` (numba's own setting) still wins where it is set, and where the
folder cannot be written numba's default applies.  The folder may be deleted at any time:
kernels are then compiled again, once.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import shutil

# The package folder (ember/): only kernels defined below it are cached here.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# Versions of one source file kept side by side (two checkouts, a branch switched back
# and forth); older ones are deleted when a new one is made.
KEEP_VERSIONS = 4


def user_folder(name: str, variable: str) -> str | None:
    """ember's folder `name` in the user's cache: ``$variable`` where set, else
    ``~/.cache/ember/<name>``; None when there is no home folder to put it in.  (Also
    where ember.compile keeps its generated kernels: _compile/codegen.py.)"""
    configured = os.environ.get(variable)
    if configured:
        return configured
    home = os.path.expanduser("~")
    # (without HOME or a password entry "~" stays as it is: a folder named "~" would
    # then be made in the working directory)
    return None if home.startswith("~") else os.path.join(home, ".cache", "ember", name)


def cache_root() -> str | None:
    """The folder of ember's compiled kernels: ``$EMBER_KERNEL_CACHE``, else
    ``~/.cache/ember/kernels`` (`user_folder`)."""
    return user_folder("kernels", "EMBER_KERNEL_CACHE")


@functools.cache
def _content_digest(path: str, mtime: float, size: int) -> str:
    # (mtime and size in the arguments: an edited file, in a running process, is hashed
    # again)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _digest_of(path: str) -> str:
    st = os.stat(path)
    return _content_digest(path, st.st_mtime, st.st_size)


@functools.cache
def _imported_files(path: str, mtime: float, size: int) -> tuple:
    """The package's source files that the module at `path` imports from directly
    (``from . import x``, ``from ._rows import _ZERO``, ``from ember.ops import y``),
    wherever the import statement stands."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(path)
    found = set()
    for node in _from_imports(text):
        if node.level:
            base = here
            for _ in range(node.level - 1):
                base = os.path.dirname(base)
            parts = node.module.split(".") if node.module else []
        elif node.module and node.module.split(".")[0] == os.path.basename(_PACKAGE):
            base, parts = os.path.dirname(_PACKAGE), node.module.split(".")
        else:
            continue
        stem = os.path.join(base, *parts)
        for alias in node.names:   # a submodule of that name, else the module `stem`
            for target in (os.path.join(stem, alias.name), stem):
                module = _module_file(target)
                if module is not None:
                    found.add(module)
                    break
    found.discard(path)
    return tuple(sorted(found))


def _from_imports(text: str) -> list:
    """The ``from ... import ...`` statements of a module's source, parsed one by one.

    NOTE: only those lines are parsed: parsing and walking the whole of the 48 kernel
    files took 212 ms, these lines 25 ms (paid once per process, for the files whose
    kernels it uses).  A docstring line that reads like an import is taken too (at worst
    one dependency more); one that does not parse is skipped."""
    statements, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].split("#", 1)[0].strip()   # (an import holds no string)
        i += 1
        if not line.startswith("from ") or " import" not in line:
            continue
        while line.count("(") > line.count(")") and i < len(lines):  # (a wrapped list)
            line += " " + lines[i].split("#", 1)[0].strip()
            i += 1
        try:
            statements += [n for n in ast.parse(line).body if isinstance(n, ast.ImportFrom)]
        except SyntaxError:
            pass
    return statements


def _module_file(target: str) -> str | None:
    """The package's source file of the module at `target` (a path without ".py")."""
    for candidate in (target + ".py", os.path.join(target, "__init__.py")):
        if os.path.isfile(candidate) and candidate.startswith(_PACKAGE + os.sep):
            return os.path.realpath(candidate)
    return None


def folder_for(py_file: str) -> str | None:
    """The cache folder of the kernels defined in `py_file`, or None when the file is not
    part of the ember package (numba's own rules then apply).

    Its name holds a hash of the file and of the package files it imports from: a kernel
    may read a number or a flag from another module (``_ZERO``, ``fastmath=_REORDER``),
    which numba freezes into the build without checking that module again."""
    real = os.path.realpath(py_file)
    root = cache_root()
    if root is None or not real.startswith(_PACKAGE + os.sep) or not os.path.isfile(real):
        return None
    st = os.stat(real)
    files = (real,) + _imported_files(real, st.st_mtime, st.st_size)
    version = hashlib.sha256(" ".join(_digest_of(f) for f in files).encode()).hexdigest()[:16]
    inside = os.path.relpath(os.path.dirname(real), os.path.dirname(_PACKAGE))
    stem = os.path.splitext(os.path.basename(real))[0]
    return os.path.join(root, inside, f"{stem}-{version}")


def prune(folder: str, keep: int = KEEP_VERSIONS) -> None:
    """Delete the oldest versions of `folder`'s source file beyond the `keep` most
    recently written (`folder` itself is always kept)."""
    parent, name = os.path.split(folder)
    stem = name.rsplit("-", 1)[0]
    try:
        siblings = [os.path.join(parent, n) for n in os.listdir(parent)
                    if n.rsplit("-", 1)[0] == stem]
        siblings.sort(key=os.path.getmtime, reverse=True)
    except OSError:
        return
    for old in [s for s in siblings if s != folder][max(keep - 1, 0):]:
        shutil.rmtree(old, ignore_errors=True)


def install(numba) -> None:
    """Make numba cache the package's kernels in `cache_root` (called once numba is
    imported).  Does nothing on a numba without the locator hooks this relies on, or when
    ``NUMBA_CACHE_LOCATOR_CLASSES`` chooses the locators."""
    caching = getattr(numba.core, "caching", None)
    # (`_CacheImpl` in older numba releases)
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    base = getattr(caching, "_CacheLocator", None)
    if impl is None or base is None or getattr(numba.config, "CACHE_LOCATOR_CLASSES", None):
        return
    classes = impl._locator_classes
    if any(getattr(c, "ember_package_locator", False) for c in classes):
        return
    # after numba's NUMBA_CACHE_DIR locator, before the one writing to __pycache__
    first = (getattr(caching, "UserProvidedCacheLocator", None)
             or getattr(caching, "_UserProvidedCacheLocator", None))
    classes.insert(1 if classes and classes[0] is first else 0, _locator_class(base))


def _locator_class(base):
    """numba's cache locator for the package's kernels: a subclass of numba's `base`
    locator class, so made once numba is imported."""

    class PackageCacheLocator(base):
        """A kernel of the ember package, cached in `folder_for` its source file.  Its
        stamp, which numba checks a cached build against, is the file content's hash;
        builds of one file are told apart by their first line, as numba's are."""

        ember_package_locator = True

        def __init__(self, py_func, py_file, folder):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = folder

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return _digest_of(os.path.realpath(self._py_file))

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            folder = folder_for(py_file)
            if folder is None:
                return None
            fresh = not os.path.isdir(folder)
            self = cls(py_func, py_file, folder)
            try:
                self.ensure_cache_path()
            except OSError:
                return None   # (numba's next locator: __pycache__)
            if fresh:
                prune(folder)
            return self

    return PackageCacheLocator
