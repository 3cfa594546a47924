"""Toolchain mounts as rules of the one engine (source ``toolchain``).

A narrow root's tools read a few things outside it: the pnpm store its
``node_modules`` links point into, the ``node_modules`` of the packages above it,
the ``package.json`` of the package it lies in, and the ``tsconfig`` files its
``extends`` chain names. The inventory finds them (``inventory.mounts.toolchain_set``,
which also refuses what is not a configuration file: credentials, ``.git``, kernel
interfaces, devices); here each one becomes a ``PathRule`` with ``source =
"toolchain"`` and ``read = "allow"``, added to the configuration the ``Policy`` gets
(``Session.set_toolchain``). The engine ranks toolchain rules below every configured
rule (``rules.RuleSet.winner``: they only fill gaps), so a user or project rule that
denies or asks for the store decides it, and ``rootguard run`` mounts only what the
engine allows.

The set in force is part of the approved configuration (``config_trust.Recorded.toolchain``):
``settle`` keeps a mount added since the last approved session *held* when the file that
asked for it lies where the agent can write (a ``tsconfig.json`` inside the root, a link in
its ``node_modules``), until the person approves it; a mount that went away is gone at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from lsp_bridge.core.settings import PathRule

KINDS = ("store", "modules", "file")


@dataclass(frozen=True)
class ToolchainMount:
    """One path outside the union a root's toolchain reads: ``kind`` "store" (a pnpm store),
    "modules" (a ``node_modules`` above the root) or "file" (one configuration file);
    ``cause``: the file whose content asked for it (None: found by place alone)."""

    path: str
    kind: str
    reason: str
    cause: str | None = None

    def rule(self) -> PathRule:
        return PathRule(id=f"toolchain-{self.kind}", path=self.path, anchor=self.path, read="allow",
                        source="toolchain", file=self.cause, is_file=self.kind == "file")

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "kind": self.kind, "reason": self.reason, "cause": self.cause}


@dataclass(frozen=True)
class Refusal:
    """A path a repository's toolchain file asks for that is never mounted, and why."""

    path: str
    reason: str
    cause: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "reason": self.reason, "cause": self.cause}


@dataclass(frozen=True)
class Settled:
    """The toolchain mounts in force, those held for the person, and the set to record as approved."""

    in_force: tuple[ToolchainMount, ...]
    held: tuple[ToolchainMount, ...]
    approved: tuple[str, ...]


def settle(found: Sequence[ToolchainMount], approved: Iterable[str] | None,
           agent_writable: Callable[[str], bool]) -> Settled:
    """Which of ``found`` apply now, given the paths approved last time (None: never recorded, so
    what is found now is approved). A new mount is held when its cause lies where the agent can
    write; one the person caused (a file outside every root) applies; one that went away is gone."""
    if approved is None:
        return Settled(tuple(found), (), tuple(sorted(m.path for m in found)))
    before = set(approved)
    in_force: list[ToolchainMount] = []
    held: list[ToolchainMount] = []
    for mount in found:
        if mount.path in before or not (mount.cause and agent_writable(mount.cause)):
            in_force.append(mount)
        else:
            held.append(mount)
    return Settled(tuple(in_force), tuple(held), tuple(sorted({m.path for m in in_force})))


def rules(mounts: Iterable[ToolchainMount]) -> tuple[PathRule, ...]:
    """One rule per mount, in a stable order."""
    return tuple(m.rule() for m in sorted(mounts, key=lambda m: m.path))


def describe(mount: ToolchainMount) -> str:
    """One line for a person: the path, what it is, and what asked for it."""
    asked = f" (asked for by {mount.cause})" if mount.cause else ""
    return f"toolchain {mount.kind} {mount.path}{asked}"
