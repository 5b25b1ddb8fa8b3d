"""Device objects: ``device("cpu")``, ``device("cuda:1")``, ``device("cuda", 0)``."""

from __future__ import annotations


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor's memory lives: ``cpu`` or ``cuda`` with an optional index."""

    __slots__ = ("type", "index")

    def __new__(cls, type_or_str, index: int | None = None):  # noqa: A002
        if isinstance(type_or_str, device):
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            type_or_str, index = "cuda", type_or_str
        if not isinstance(type_or_str, str):
            raise TypeError(f"device() expected a string or int, got {type(type_or_str).__name__}")
        text = type_or_str.strip()
        if ":" in text:
            if index is not None:
                raise ValueError(f"device string {text!r} already holds an index")
            text, _, idx = text.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            index = int(idx)
        if text not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                "Expected one of cpu, cuda, meta device type at start of device string: "
                f"{type_or_str}"
            )
        if text == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be 0 or None, got {index}")
        return _intern(text, index)

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        # NOTE: a device equals only a device, as in PyTorch: ``device("cpu") == "cpu"`` is
        # False (compare ``dev.type == "cpu"`` instead).
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


_INTERNED: dict = {}


def _intern(kind: str, index: int | None) -> device:
    key = (kind, index)
    dev = _INTERNED.get(key)
    if dev is None:
        dev = object.__new__(device)
        object.__setattr__(dev, "type", kind)
        object.__setattr__(dev, "index", index)
        _INTERNED[key] = dev
    return dev


CPU = device("cpu")


def to_device(value) -> device:
    """Parse a device argument (device, str or int); None means the CPU."""
    if value is None:
        return CPU
    return device(value)


_DEFAULT = [CPU]  # where factories put tensors made without a device (set_default_device)


def factory_device(value) -> device:
    """The device a factory makes its tensor on: `value`, or the default device."""
    return _DEFAULT[0] if value is None else device(value)


def set_default_device(value) -> None:
    """Make factories (``tensor``, ``zeros``, ``randn``...) called without a device put their
    tensors on `value` (None: the CPU again)."""
    _DEFAULT[0] = CPU if value is None else device(value)


def get_default_device() -> device:
    """The device factories use when given none (the CPU unless set_default_device)."""
    return _DEFAULT[0]


def same_device(a: device, b: device) -> bool:
    """`cuda` and `cuda:0` name the same device when the current device is 0."""
    if a is b:
        return True
    if a.type != b.type:
        return False
    return (a.index or 0) == (b.index or 0)
