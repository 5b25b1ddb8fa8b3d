"""Detecting mismatched collectives (``EMBER_DISTRIBUTED_DEBUG=DETAIL``).

MPI matches collectives by their order on a communicator only: if rank 0 calls
``all_reduce`` while rank 1 calls ``broadcast``, or the two pass tensors of different shapes,
MPI may hang or silently mix data.  In DETAIL mode, before each collective every rank sends
every other rank a small fingerprint: the call's number on the group, its signature (op,
shapes, dtypes, root, reduction) and the user's call site.  Every rank compares them and,
on any difference, raises a `DistBackendError` listing each rank's call and where it was
made, before any data moves; a rank that does not arrive within the timeout is named.

The level comes from ``EMBER_DISTRIBUTED_DEBUG`` (or PyTorch's ``TORCH_DISTRIBUTED_DEBUG``):
OFF (default), INFO (same as OFF here) or DETAIL; ``set_debug_level`` changes it.  Every
rank must run at the same level.
"""

from __future__ import annotations

import enum
import json
import os
import sys

from ._backend import DistBackendError
from ._group import mark_broken


class DebugLevel(enum.Enum):
    """How much checking the collectives do (PyTorch's ``TORCH_DISTRIBUTED_DEBUG``)."""

    OFF = 0
    INFO = 1
    DETAIL = 2


def _from_env() -> DebugLevel:
    value = os.environ.get("EMBER_DISTRIBUTED_DEBUG") or os.environ.get(
        "TORCH_DISTRIBUTED_DEBUG") or "OFF"
    try:
        return DebugLevel[value.strip().upper()]
    except KeyError:
        raise ValueError(f"EMBER_DISTRIBUTED_DEBUG={value!r}: expected OFF, INFO or DETAIL"
                         ) from None


_LEVEL = [_from_env()]


def get_debug_level() -> DebugLevel:
    """The current debug level."""
    return _LEVEL[0]


def set_debug_level(level: DebugLevel) -> None:
    """Set the debug level (on every rank alike)."""
    _LEVEL[0] = DebugLevel(level)


def set_debug_level_from_env() -> None:
    """Read the level from ``EMBER_DISTRIBUTED_DEBUG`` / ``TORCH_DISTRIBUTED_DEBUG`` again."""
    _LEVEL[0] = _from_env()


def detail() -> bool:
    return _LEVEL[0] is DebugLevel.DETAIL


_OWN_DIRS = (os.path.dirname(os.path.abspath(__file__)),
             os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nn",
                          "parallel"))


def call_site() -> str:
    """'file:line in function' of the first caller outside ember.distributed and DDP."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_OWN_DIRS):
            return f"{path}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "<unknown>"


def array_meta(array) -> str:
    """'float32[4, 3]' for an array."""
    return f"{array.dtype.name}{list(array.shape)}"


def check(pg, op: str, signature: str) -> None:
    """Compare this collective with every other rank's; raise on any difference."""
    seq = pg._seq + 1
    payload = json.dumps({"seq": seq, "sig": signature, "site": call_site()}).encode()
    replies = pg._backend.exchange(payload, pg._timeout)
    me = pg.rank()
    missing = [pg._ranks[r] for r, reply in enumerate(replies) if reply is None]
    if missing:
        who = ", ".join(str(r) for r in missing)
        raise mark_broken(pg, (
            f"{op} (call #{seq} on {pg._describe()}) on rank {pg._ranks[me]}: rank(s) {who} did "
            f"not reach this collective within {pg._timeout:.1f} s; they may have died, be "
            "stuck, or be waiting in a different operation"))
    calls = [_parse(reply) for reply in replies]
    if all(c["seq"] == seq and c["sig"] == signature for c in calls):
        return
    lines = [f"rank {pg._ranks[r]}: call #{c['seq']} {c['sig']} at {c['site']}"
             for r, c in enumerate(calls)]
    raise DistBackendError(
        f"mismatched collectives on {pg._describe()} (detected on rank {pg._ranks[me]}); "
        "every rank must make the same collective calls in the same order, with tensors of "
        "the same shape and dtype:\n  " + "\n  ".join(lines))


def _parse(reply: bytes) -> dict:
    try:
        return json.loads(reply.decode())
    except (ValueError, UnicodeDecodeError):  # the peer is in monitored_barrier
        text = reply.decode("utf-8", "replace")
        return {"seq": "?", "sig": f"{text}()", "site": "<unknown>"}
