"""The effective union of a root list, and what a change of it widens.

A root list means the union of its entries and nothing else (seed 000): an
entry contained in another contributes nothing, so it is *shadowed*. Entries
are compared on their canonical form; an entry that cannot be canonicalised is
rejected with a diagnostic and never replaced by something wider.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import PrefixIndex, canonical, fold, is_within

if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Candidate:
    """A proposed root: the path as given, and why it is proposed."""

    path: str
    origin: str = "folder"  # folder | worktree | config | environment | temp | any-path
    reason: str = "workspace folder"


@dataclass(frozen=True)
class RootEntry:
    path: str  # canonical
    origin: str
    reason: str
    given: str  # the path as it was given (absolute, may contain links)


@dataclass(frozen=True)
class Shadowed:
    path: str
    by: str
    origin: str
    reason: str


@dataclass(frozen=True)
class Widening:
    """One new entry that makes the union larger than it was."""

    folder: str  # the new entry
    kind: str  # "ancestor" (contains old entries: the costly case) or "disjoint"
    contains: tuple[str, ...] = ()  # old entries it swallows

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "entry": self.contains[0] if self.contains else None,
            "contains": list(self.contains),
            "kind": self.kind,
        }

    def describe(self) -> str:
        if self.kind == "ancestor":
            olds = ", ".join(self.contains)
            return f"{self.folder} widens {olds}: it contains the narrow root, which no longer limits anything"
        return f"{self.folder} adds a disjoint root (a smaller widening: it contains no existing root)"


@dataclass(frozen=True)
class Union:
    entries: tuple[RootEntry, ...] = ()
    shadowed: tuple[Shadowed, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    _index: PrefixIndex[RootEntry] = field(default_factory=lambda: PrefixIndex({}), repr=False, compare=False)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(e.path for e in self.entries)

    def contains(self, path: str) -> bool:
        """Whether canonical ``path`` lies inside any entry."""
        return self.entry_for(path) is not None

    def entry_for(self, path: str) -> RootEntry | None:
        """The entry containing canonical ``path``."""
        return self._index.nearest(fold(path))

    def is_subset_of(self, other: Union) -> bool:
        return all(other.contains(e.path) for e in self.entries)

    def widenings_from(self, old: Union) -> list[Widening]:
        """The entries of this union not covered by ``old``, each classified."""
        found = []
        for entry in self.entries:
            if old.contains(entry.path):
                continue
            swallowed = tuple(o.path for o in old.entries if is_within(fold(o.path), fold(entry.path)))
            found.append(Widening(entry.path, "ancestor" if swallowed else "disjoint", swallowed))
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "union": list(self.paths),
            "entries": [{"path": e.path, "origin": e.origin, "reason": e.reason} for e in self.entries],
            "shadowed": [{"path": s.path, "by": s.by, "origin": s.origin, "reason": s.reason} for s in self.shadowed],
        }


def compute_union(candidates: Iterable[Candidate]) -> Union:
    """Canonicalise, drop invalid entries (with a diagnostic), collapse containment.

    The order of the surviving entries follows the order they were given in.
    If every candidate is invalid the union is empty: nothing is allowed.
    """
    accepted: list[RootEntry] = []
    diagnostics: list[Diagnostic] = []
    for cand in candidates:
        try:
            path = canonical(cand.path)
        except (ValueError, OSError) as err:
            diagnostics.append(Diagnostic("error", "invalid-root", f"root {cand.path!r} rejected: {err}"))
            continue
        if not os.path.isdir(path):
            diagnostics.append(
                Diagnostic("error", "invalid-root", f"root {cand.path!r} rejected: not an existing directory ({path})")
            )
            continue
        accepted.append(RootEntry(path, cand.origin, cand.reason, cand.path))

    # Shortest first: a container is always seen before what it contains.
    by_depth = sorted(range(len(accepted)), key=lambda i: (len(accepted[i].path), i))
    kept: list[int] = []
    shadowed: list[Shadowed] = []
    seen: dict[str, str] = {}
    for i in by_depth:
        entry = accepted[i]
        key = fold(entry.path)
        container = _container(key, seen)
        if container is not None:
            shadowed.append(Shadowed(entry.path, container, entry.origin, entry.reason))
            continue
        seen[key] = entry.path
        kept.append(i)
    entries = tuple(accepted[i] for i in sorted(kept))
    return Union(entries, tuple(shadowed), tuple(diagnostics), PrefixIndex({fold(e.path): e for e in entries}))


def _container(key: str, seen: dict[str, str]) -> str | None:
    probe = key
    while True:
        if probe in seen:
            return seen[probe]
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
