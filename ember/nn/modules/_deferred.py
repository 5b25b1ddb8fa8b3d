"""Names a module re-exports from a file that imports it (PyTorch's import paths).

PyTorch defines ``LazyConv2d`` in ``nn/modules/conv.py``, ``SyncBatchNorm`` in
``batchnorm.py`` and so on.  Here those classes live in ``lazy.py`` and
``sync_batchnorm.py``, which import ``conv.py``/``batchnorm.py`` themselves, so an import
at the top of ``conv.py`` would be circular.  A module-level ``__getattr__`` (PEP 562)
resolves the names on first use instead, which keeps ``from ember.nn.modules.conv import
LazyConv2d`` working.
"""

from __future__ import annotations

import importlib


def deferred_exports(module_name: str, sources: dict[str, tuple[str, ...]]):
    """Return a module ``__getattr__`` that finds ``names`` in the sibling modules given.

    ``sources`` maps a sibling module (e.g. ``"lazy"``) to the names taken from it.
    """
    package = module_name.rpartition(".")[0]
    where = {name: sibling for sibling, names in sources.items() for name in names}

    def __getattr__(name: str):  # noqa: N807 - it becomes the module's __getattr__
        if name in where:
            return getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
