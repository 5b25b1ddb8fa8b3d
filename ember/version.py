"""``ember.version``: the release number (``torch.version.__version__``); it imports nothing,
so any module may read it."""

__version__ = "0.1.0"
