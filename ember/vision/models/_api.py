"""Weight enums: each member names a file of pretrained weights (by its URL, found in the
local hub cache, see ``ember.hub``), the preprocessing it expects and facts about it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ... import hub


@dataclass
class Weights:
    """`url` of the file, `transforms` (builds the preprocessing), `meta` (categories,
    number of parameters, accuracy...)."""

    url: str
    transforms: Callable
    meta: dict[str, Any] = field(default_factory=dict)


class WeightsEnum(Enum):
    """Base of the ``*_Weights`` enums: members read like their `Weights`
    (``ResNet18_Weights.IMAGENET1K_V1.url``)."""

    @classmethod
    def verify(cls, obj):
        """`obj` as a member of this enum: None, a member, or a name such as
        ``"IMAGENET1K_V1"`` or ``"DEFAULT"`` (also ``"ResNet18_Weights.DEFAULT"``)."""
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            name = obj.replace(cls.__name__ + ".", "")
            if name in cls.__members__:
                return cls.__members__[name]
            raise ValueError(f"Failed to find Weights {obj!r} in {cls.__name__}. Choose one "
                             f"of {sorted(cls.__members__)}")
        raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but "
                        f"received {type(obj).__name__}.")

    def get_state_dict(self, progress: bool = True, check_hash: bool = False, **kwargs):
        """The weights, from the local hub cache (see ``ember.hub``)."""
        return hub.load_state_dict_from_url(self.url, progress=progress,
                                            check_hash=check_hash, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        return self.value.transforms

    @property
    def meta(self) -> dict:
        return self.value.meta
