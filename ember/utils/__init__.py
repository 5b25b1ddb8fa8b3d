"""Utilities: ``ember.utils.data`` (datasets, samplers and the DataLoader)."""

from . import data
from . import checkpoint  # as in PyTorch, ember.utils.checkpoint needs no explicit import
