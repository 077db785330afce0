"""The consistent-hash ring: which shard an object belongs to.

Each member is hashed onto a 64-bit ring at ``TOKENS_PER_MEMBER`` points (virtual nodes, for an
even spread), and a key belongs to the member owning the first token at or after the key's
hash, wrapping around. Adding or removing a member therefore moves only the keys whose next
token changed: those the member takes or gives up, about ``1/N`` of them, never keys between
two other members. The hash is xxHash64 (seed 0) and a member's tokens hash ``member + "0"`` …
``member + "99"``, as timebertt/kubernetes-controller-sharding does, so a Go sharder and a
kubetrio one assign every object alike.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import xxhash

TOKENS_PER_MEMBER = 100


def hash64(text: str) -> int:
    """xxHash64 of ``text``'s UTF-8 bytes, seed 0 (Go's ``xxhash.Sum64String``)."""
    return xxhash.xxh64_intdigest(text.encode())


class Ring:
    """An immutable ring of members; build a new one when membership changes (it is cheap:
    ``100 * members`` hashes and a sort)."""

    __slots__ = ("_members", "_owners", "_tokens")

    def __init__(self, members: Iterable[str], tokens_per_member: int = TOKENS_PER_MEMBER) -> None:
        if tokens_per_member < 1:
            raise ValueError(f"tokens_per_member must be at least 1, got {tokens_per_member}")
        self._members = frozenset(members)
        owner_of: dict[int, str] = {}
        # Sorted members: should two tokens collide, the same member wins on every replica.
        for member in sorted(self._members):
            for index in range(tokens_per_member):
                owner_of.setdefault(hash64(f"{member}{index}"), member)
        self._tokens = sorted(owner_of)
        self._owners = [owner_of[token] for token in self._tokens]

    @property
    def members(self) -> frozenset[str]:
        return self._members

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def owner(self, key: str) -> str | None:
        """The member ``key`` belongs to; None on an empty ring."""
        if not self._tokens:
            return None
        index = bisect.bisect_left(self._tokens, hash64(key))
        return self._owners[index if index < len(self._tokens) else 0]
