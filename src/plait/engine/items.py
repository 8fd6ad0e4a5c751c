"""Finished loop iterations and map items of a checkpointed run, so a crash does not run them again.

A loop or map node runs its body once per iteration or item (`ctx.run_body` with an `index`
alias). In a checkpointed run each body run that finishes is recorded as one `NodeDelta` of
status `item` (`ITEM_STATUS`) whose `node_id` is the item's key: the owning node's id, `@`, the
index (`map1@3`), with the keys of the bodies it runs inside in front (`loop1@2/map1@3` for item 3
of `map1` in iteration 2 of `loop1`; `@` never occurs in a node id). The delta holds the body's
outputs and the flow variables the body changed.

When the owning node runs again after a restore (its last attempt was cut short), `run_body`
finds the recorded item and returns its outputs (and sets its variables) without running the
body: only the missing items run. Once the top-level owner's own delta (ok or error) is
committed, its items are dropped: the node's output stands for them, and a later execution of
the node (a policy running it again) starts afresh.
"""

from __future__ import annotations

from plait.engine.checkpoint import NodeDelta

ITEM_STATUS = "item"


def item_key(prefix: str, node_id: str, index: int) -> str:
    """The key of item `index` of node `node_id` in a body whose own key prefix is `prefix`."""
    return f"{prefix}{node_id}@{index}"


def owner_of(key: str) -> str:
    """The top-level node an item key belongs to (what its first `@` ends)."""
    return key.split("@", 1)[0]


class ItemRecords:
    """The recorded items of one run, by top-level owner node id, then by key."""

    __slots__ = ("by_owner",)

    def __init__(self) -> None:
        self.by_owner: dict[str, dict[str, NodeDelta]] = {}

    def __bool__(self) -> bool:
        return bool(self.by_owner)

    def get(self, key: str) -> NodeDelta | None:
        owned = self.by_owner.get(owner_of(key))
        return None if owned is None else owned.get(key)

    def put(self, delta: NodeDelta) -> None:
        self.by_owner.setdefault(owner_of(delta.node_id), {})[delta.node_id] = delta

    def drop(self, node_id: str) -> None:
        """Forget the items of top-level node `node_id` (its own delta now stands for them)."""
        self.by_owner.pop(node_id, None)


__all__ = ["ITEM_STATUS", "ItemRecords", "item_key", "owner_of"]
