"""Pretrained weights from a local cache (``torch.hub``'s API, without the network).

ember never downloads.  `load_state_dict_from_url` takes the file name from the URL and
looks for it in the cache folder, ``$TORCH_HOME/hub/checkpoints/`` (``TORCH_HOME``
defaults to ``$XDG_CACHE_HOME/torch``, then ``~/.cache/torch``: the folder PyTorch
downloads into, so weights fetched once with PyTorch are found).  A missing file raises
an error naming the file, the folder to put it in and the URL to get it from.  Files are
read with ``ember.load``, which reads PyTorch's ``.pt``/``.pth`` zip files without running
code from them.

`load`, `list` and `help` work with ``source="local"`` (a folder with a ``hubconf.py``):
that runs the folder's own code, as in PyTorch, so use it only on folders you trust.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from urllib.parse import urlparse

from . import serialization

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_hub_dir: str | None = None


def _torch_home() -> str:
    default = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")
    return os.path.expanduser(os.getenv("TORCH_HOME", default))


def get_dir() -> str:
    """The hub folder: the one given to `set_dir`, else ``$TORCH_HOME/hub``."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_torch_home(), "hub")


def set_dir(d) -> None:
    """Use `d` as the hub folder (weights are then looked for in ``d/checkpoints``)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Not available: ember never downloads.  Raises RuntimeError saying where to put the
    file by hand."""
    raise RuntimeError(f"ember does not download files: fetch {url} yourself and save it "
                       f"as {os.fspath(dst)}")


def _check_hash(path: str, file_name: str) -> None:
    match = HASH_REGEX.search(file_name)
    if match is None:
        return
    prefix = match.group(1)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if not digest.hexdigest().startswith(prefix):
        raise RuntimeError(f'invalid hash value (expected "{prefix}", got '
                           f'"{digest.hexdigest()}") for {path}; the file is damaged or is '
                           "not the one the URL names")


def load_state_dict_from_url(url: str, model_dir=None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = True):
    """Load the object saved at `url` from the local cache, with ``ember.load``.

    Args:
        url: where the file comes from; its last path component is the file name.
        model_dir: the folder to look in (default ``get_dir()/checkpoints``).
        map_location: passed to ``ember.load``.
        progress: accepted for compatibility (nothing is downloaded).
        check_hash: verify that the file's SHA-256 starts with the hex digits after the
            last ``-`` of the file name (``resnet18-f37072fd.pth``).
        file_name: the name in the cache, if not the URL's.
        weights_only: passed to ``ember.load`` (True: no code from the file runs).

    A missing file raises FileNotFoundError naming the file, the folder and the URL.
    """
    model_dir = get_dir() + os.sep + "checkpoints" if model_dir is None else os.fspath(
        model_dir)
    name = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.isfile(cached):
        raise FileNotFoundError(
            f"pretrained weights {name!r} not found in {os.path.abspath(model_dir)}. ember "
            f"never downloads: fetch {url} and put it in that folder (set TORCH_HOME to use "
            "another cache folder, e.g. one PyTorch already downloaded into).")
    if check_hash:
        _check_hash(cached, name)
    return serialization.load(cached, map_location=map_location, weights_only=weights_only)


# -- hubconf.py in a local folder -------------------------------------------------------

def _local_hubconf(repo_or_dir: str, source: str):
    if source != "local":
        raise ValueError(f"ember.hub only loads from a local folder (source='local'); "
                         f"source={source!r} would need the network. Clone the repository "
                         "and pass its folder with source='local'.")
    path = os.path.join(os.path.expanduser(repo_or_dir), "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no hubconf.py in {repo_or_dir}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


def _entrypoint(module, model: str):
    func = getattr(module, model, None)
    if func is None or not callable(func) or model.startswith("_"):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(repo_or_dir: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo=None, verbose: bool = True, source: str = "github"):
    """The entry points (public callables) of a local folder's ``hubconf.py``."""
    module = _local_hubconf(repo_or_dir, source)
    return [name for name in dir(module)
            if callable(getattr(module, name)) and not name.startswith("_")]


def help(repo_or_dir: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo=None, source: str = "github") -> str:
    """The docstring of entry point `model` of a local folder's ``hubconf.py``."""
    return _entrypoint(_local_hubconf(repo_or_dir, source), model).__doc__


def load(repo_or_dir: str, model: str, *args, source: str = "github", trust_repo=None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs):
    """Call entry point `model` of a local folder's ``hubconf.py`` with the arguments.

    Only ``source="local"`` works (runs that folder's code: trust it first).
    """
    return _entrypoint(_local_hubconf(repo_or_dir, source), model)(*args, **kwargs)
