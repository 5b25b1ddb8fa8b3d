"""Utilities: ``ember.utils.data`` (datasets, samplers and the DataLoader)."""

from . import data
