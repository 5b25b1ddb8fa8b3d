"""ChannelShuffle at PyTorch's import path (the layer itself lives in pixelshuffle.py)."""

from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
