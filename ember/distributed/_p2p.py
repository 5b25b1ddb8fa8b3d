"""Point-to-point communication: send/recv, isend/irecv, batch_isend_irecv.

Peers are given as global ranks (``dst``/``src``) or as ranks within the group
(``group_dst``/``group_src``), as in PyTorch.  The data goes straight from and into the
tensor's memory.  A wait that runs out of the group's timeout names the peer.
"""

from __future__ import annotations

from ._collectives import _array, _pg, _root
from ._group import mark_broken


def _peer(pg, global_rank, group_rank, op: str) -> int:
    return _root(pg, global_rank, group_rank, op)


def _setup(work, pg, label: str, blame: str):
    work._timeout = pg._timeout
    work._label = label
    work._on_timeout = lambda waited: mark_broken(pg, (
        f"{label} timed out after {waited:.1f} s on rank {pg._ranks[pg.rank()]}: {blame}"))
    return work


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """Start sending `tensor` to rank `dst`; returns a Work to ``wait()`` on."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    peer = _peer(pg, dst, group_dst, "send")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as "
                         "the rank of the current process.")
    who = pg._ranks[peer]
    work = pg._backend.send(a, peer, int(tag))
    work._result = [tensor]
    return _setup(work, pg, f"send to rank {who} (tag {tag})",
                  f"rank {who} did not receive it (it may have died or be stuck)")


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Start receiving into `tensor` from rank `src` (any rank when both src arguments are
    None); returns a Work whose wait leaves the data in `tensor`."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    data = tensor._data
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "recv")
    if peer is not None and peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    work = pg._backend.recv(a, peer, int(tag))
    backend_finish = work._finish

    def finish() -> None:
        if backend_finish is not None:
            backend_finish()
        work.value = pg._ranks[work.value]  # the sender's global rank
        if a is not data:
            tensor._data[...] = a
        tensor._version.value += 1

    work._finish = finish
    work._result = [tensor]
    if peer is None:
        return _setup(work, pg, f"recv from any rank (tag {tag})", "no rank sent a message")
    who = pg._ranks[peer]
    return _setup(work, pg, f"recv from rank {who} (tag {tag})",
                  f"rank {who} did not send (it may have died or be stuck)")


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send `tensor` to rank `dst` and wait until it is on its way."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into `tensor` from rank `src` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.value


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``ember.distributed.isend`` or ``ember.distributed.irecv``.")
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every send and receive of the list at once; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``ember.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works
