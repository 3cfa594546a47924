"""Answers already given, kept by the whole question: a cache of a pure function, nothing more.

``Policy.decide_target`` keeps its decisions here, keyed by (operation, the
operation reported, ``Target``): the target's canonical path, the links met on the
way, its inode and link count; ``Policy.decide_children`` keeps a listing's verdicts
(before session grants) in another, keyed by (operation, directory, names, each
name's inode and link count). The policy itself (configuration, scope, protected
areas) is fixed for the memo's lifetime, since every change builds a new ``Policy``;
decisions that asked something that changes with the disk (the hard-link index) are
never kept. So a kept answer is the answer the engine would give again.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

DEFAULT_LIMIT = 65_536  # questions kept; a full memo starts over (a few tens of MB at most)


class DecisionMemo(Generic[V]):
    """A bounded map from question to answer; emptied whole when full (no eviction order to keep)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._answers: dict[Hashable, V] = {}
        self._limit = limit

    def get(self, key: Hashable) -> V | None:
        return self._answers.get(key)

    def put(self, key: Hashable, value: V) -> None:
        if self._limit <= 0:
            return
        if len(self._answers) >= self._limit:
            self._answers.clear()
        self._answers[key] = value

    def __len__(self) -> int:
        return len(self._answers)
