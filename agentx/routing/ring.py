"""A consistent-hash ring: the ``session`` policy's map from a tree's key to a replica.

Each replica owns :data:`VNODES` points on a 64-bit ring, placed by hashing ``(replica,
point)``; a key goes to the owner of the first point at or after the key's own hash. A
replica's points do not depend on how many replicas there are, so growing the ring from N to
N + 1 replicas moves only the keys the new replica's points take: about 1/(N + 1) of them, all
to the new replica (rendezvous with the rest of the ring unchanged).
"""

from __future__ import annotations

import bisect
import hashlib

VNODES = 160  # points per replica: the spread of a replica's share is ~1/sqrt(VNODES)


def hash64(text: str) -> int:
    """A stable 64-bit hash of ``text`` (the same in every process and run, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class HashRing:
    """Replicas ``0 .. replicas - 1`` on a ring of :data:`VNODES` points each."""

    def __init__(self, replicas: int, vnodes: int = VNODES) -> None:
        if replicas < 1:
            raise ValueError("a ring needs at least one replica")
        points = sorted(
            (hash64(f"agentx-replica-{r}#{v}"), r) for r in range(replicas) for v in range(vnodes)
        )
        self.replicas = replicas
        self._points = [p for p, _ in points]
        self._owners = [r for _, r in points]

    def replica_of(self, key: str) -> int:
        """The replica that owns ``key``."""
        i = bisect.bisect_left(self._points, hash64(key))
        return self._owners[i % len(self._owners)]
