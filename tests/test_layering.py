"""ember's floors: imports run one way, from a higher floor down to a lower one.

The import graph is read from the source with ``ast`` (every ``import``, at module level
or inside a function, except under ``if TYPE_CHECKING:``), so a lazy import does not hide
an upward call.  Each module belongs to the unit of the longest prefix in ``FLOORS``; a
module may import its own floor or a lower one, the graph between units has no cycle, and
neither has the graph between top-level packages (a PyTorch-path alias such as
``nn.quantized`` counts in the package it re-exports, and imports nothing else).

Floors (a unit sits above everything it imports):

====  ==========================================================================
 0    ``_core``: Tensor, Function, the engine, dtypes, devices, backend arrays;
      ``version`` (imports nothing)
 1    ``ops`` and what kernels draw on: ``random`` (generators), ``_interop``,
      ``_threads``, ``_legacy_types``
 2    public namespaces over ops and the services beside autograd: ``autograd``,
      ``_tensor_methods``, ``sparse``, ``fft``, ``linalg``, ``special``, ``func``,
      ``amp``, ``profiler``, ``cuda``, ``accelerator``, ``backends``, ``testing``,
      ``viz``, ``distributed`` (process groups import only ``_core``; DDP and
      SyncBatchNorm in ``nn`` call them, as in PyTorch), ``utils.checkpoint``,
      ``utils.dlpack``
 3    models and training: ``nn``, ``optim``, ``distributions``, ``ao``
      (quantization builds on ``nn``), ``utils.tensorboard``
 4    applications: ``utils.data``, ``vision``, ``onnx``, ``serialization``, ``hub``,
      ``multiprocessing`` (sends Parameters between processes),
      the PyTorch-path aliases ``nn.quantized`` (of ``ao.nn.quantized``) and
      ``quantization`` (of ``ao.quantization``)
 5    ``jit`` (traces through ``onnx``'s tracer, saves through ``serialization``),
      ``compiler`` and ``_compile`` (compile what ``jit`` traces)
 6    ``ember`` itself: the public namespace, which imports everything
====  ==========================================================================

Run as a script (``python -m tests.test_layering``) it prints the violations, the unit
cycles and the count of function-level imports of ember modules.
"""

from __future__ import annotations

import ast
import functools
import pathlib
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent / "ember"

FLOORS = {
    "ember._core": 0, "ember.version": 0,
    "ember.ops": 1, "ember.random": 1, "ember._interop": 1, "ember._threads": 1,
    "ember._legacy_types": 1, "ember._sampling": 1,
    "ember.autograd": 2, "ember._tensor_methods": 2, "ember.sparse": 2, "ember.fft": 2,
    "ember.linalg": 2, "ember.special": 2, "ember.func": 2, "ember.amp": 2,
    "ember.profiler": 2, "ember.cuda": 2, "ember.accelerator": 2, "ember.backends": 2,
    "ember.testing": 2, "ember.viz": 2, "ember.distributed": 2,
    "ember.utils.checkpoint": 2, "ember.utils.dlpack": 2,
    "ember.nn": 3, "ember.optim": 3, "ember.distributions": 3, "ember.ao": 3,
    "ember.utils.tensorboard": 3,
    "ember.utils": 4, "ember.vision": 4, "ember.onnx": 4, "ember.serialization": 4,
    "ember.hub": 4, "ember.nn.quantized": 4, "ember.quantization": 4,
    "ember.multiprocessing": 4,
    "ember.jit": 5, "ember._compile": 5, "ember.compiler": 5,
    "ember": 6,
}


def modules(root: pathlib.Path = ROOT) -> dict[str, pathlib.Path]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imports(name: str, path: pathlib.Path, known: dict) -> list[tuple[str, int, bool]]:
    """The ember modules `name` imports: (target, line, inside a function)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def target_of(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")
        base = base[:len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                base = target_of(child)
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if sub in known else base
                    if target == "ember" or target.startswith("ember."):
                        found.append((target, child.lineno, inner))
            elif isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, inner) for a in child.names
                             if a.name == "ember" or a.name.startswith("ember."))
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


def unit_of(module: str) -> str:
    """The FLOORS key that owns `module` (the longest matching prefix; ``ember`` alone is
    the top namespace, not a catch-all)."""
    if module == "ember":
        return module
    parts = module.split(".")
    for n in range(len(parts), 1, -1):
        prefix = ".".join(parts[:n])
        if prefix in FLOORS:
            return prefix
    raise KeyError(module)


@functools.cache  # parsed once for the four tests that read it (~1 s a parse); read only
def graph():
    """(module edges, unit edges): module -> [(target, line, lazy)], unit -> {unit}."""
    known = modules()
    edges = {name: imports(name, path, known) for name, path in known.items()}
    units = defaultdict(set)
    for name, targets in edges.items():
        for target, _, _ in targets:
            a, b = unit_of(name), unit_of(target)
            if a != b:
                units[a].add(b)
    return edges, units


def upward_imports(edges) -> list[str]:
    """Each import of a higher floor, as 'module:line -> target'."""
    bad = []
    for name, targets in sorted(edges.items()):
        for target, line, _ in targets:
            if FLOORS[unit_of(target)] > FLOORS[unit_of(name)]:
                bad.append(f"{name}:{line} -> {target}")
    return bad


def cycles(units) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan's algorithm)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in units.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(units):
        if v not in index:
            connect(v)
    return groups


def test_every_module_has_a_floor():
    for name in modules():
        unit_of(name)  # raises KeyError for a module outside the table


def test_no_lower_floor_imports_a_higher_one():
    edges, _ = graph()
    assert upward_imports(edges) == []


def test_the_graph_between_units_has_no_cycle():
    _, units = graph()
    assert cycles(units) == []


# PyTorch's import paths that re-export a package of a higher floor (``torch.nn.quantized`` is
# ``torch.ao.nn.quantized``): they sit inside a lower package's folder but belong to the
# package they re-export, and import nothing else.  (A file in ``nn/`` cannot re-export ``ao``
# without an import edge from ``nn``; the alternative, aliasing the module in
# ``sys.modules`` from ``ember/__init__.py``, would give it the target's name.)
ALIASES = {"ember.nn.quantized": "ember.ao.nn.quantized"}


def package_of(module: str) -> str:
    """The top-level package a module counts in: its own, or for an alias the one it
    re-exports."""
    for alias, target in ALIASES.items():
        if module == alias or module.startswith(alias + "."):
            module = target
    return ".".join(module.split(".")[:2])


def test_aliases_import_only_what_they_re_export():
    edges, _ = graph()
    for name, targets in edges.items():
        for alias, target in ALIASES.items():
            if name == alias or name.startswith(alias + "."):
                assert [t for t, _, _ in targets if not t.startswith(target)] == [], name


def test_the_graph_between_top_level_packages_has_no_cycle():
    edges, _ = graph()
    packages = defaultdict(set)
    for name, targets in edges.items():
        for target, _, _ in targets:
            a, b = package_of(name), package_of(target)
            if a != b:
                packages[a].add(b)
    assert cycles(packages) == []


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    pkg = tmp_path / "ember"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "nn.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..nn import X\n"
        "def f():\n    from .. import nn\n")
    known = modules(pkg)
    assert imports("ember.ops.a", pkg / "ops" / "a.py", known) == [("ember.nn", 5, True)]
    assert upward_imports({"ember.ops.a": [("ember.nn", 5, True)]}) == [
        "ember.ops.a:5 -> ember.nn"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


if __name__ == "__main__":
    module_edges, unit_edges = graph()
    for line in upward_imports(module_edges):
        print("upward:", line)
    for group in cycles(unit_edges):
        print("cycle:", " <-> ".join(group))
    lazy = sum(lazy for targets in module_edges.values() for _, _, lazy in targets)
    print("function-level imports of ember modules:", lazy)
