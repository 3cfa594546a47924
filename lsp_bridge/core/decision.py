"""What the policy engine answers, and what it is asked about: plain records, no logic.

``Target`` is a path as the engine sees it (canonical, the links met on the way, the
inode and link count of a regular file); ``Decision`` is one verdict with its rule and
reason; a batch (``Policy.decide_batch``) answers with one ``ItemDecision`` per item
and a ``BatchDecision`` for the whole.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsp_bridge.core.settings import Verdict

OPERATIONS = ("read", "write", "delete", "rename", "metadata")
NEEDS = {"read": "read", "write": "write", "metadata": "write", "delete": "delete"}  # what each operation needs
MUTATING = frozenset({"write", "metadata", "delete", "rename"})


class PolicyInputError(ValueError):
    """A request the engine cannot even consider (bad op, empty path...)."""


@dataclass(frozen=True)
class Target:
    """A path as the engine sees it: canonical, plus where each link on the way sits."""

    canonical: str
    links: tuple[str, ...] = ()  # canonical locations of the symbolic links traversed
    loop: bool = False  # resolution met a symbolic link loop: nothing to authorize
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of an existing regular file
    nlink: int = 1


@dataclass(frozen=True)
class Decision:
    decision: Verdict
    path: str  # canonical
    op: str
    rule: str | None
    reason: str
    rule_source: str | None = None
    root: str | None = None  # the selected root
    dest: Decision | None = None  # rename: the destination's decision

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "decision": self.decision,
            "path": self.path,
            "rule": self.rule,
            "reason": self.reason,
            "op": self.op,
            "rule_source": self.rule_source,
        }
        if self.dest is not None:
            data["dest"] = self.dest.to_json()
        return data


@dataclass(frozen=True)
class Part:
    """One need of one batch item on one canonical path, as decided, then after session grants."""

    need: str  # read | write | delete
    path: str  # canonical
    decision: Decision  # the engine's decision for this need
    verdict: Verdict  # after session grants: a granted ``request`` is ``allow``


@dataclass(frozen=True)
class ItemDecision:
    """One item of a batch: the engine's decision, its parts, and the verdict after grants."""

    decision: Decision  # for several needs: the strictest; for a rename: the whole rename
    parts: tuple[Part, ...]
    verdict: Verdict  # after session grants
    reason: str

    @property
    def granted(self) -> bool:
        """A ``request`` that an "allow for this session" answer already covers."""
        return self.decision.decision == "request" and self.verdict == "allow"


@dataclass(frozen=True)
class BatchDecision:
    decision: Verdict
    items: tuple[Decision, ...]
    reason: str
    results: tuple[ItemDecision, ...] = ()
    culprit: int | None = None  # the item that made the batch deny or request (None: the span rule, or allowed)
    spans_roots: bool = False  # denied because the call spans roots whose policies differ

    @property
    def pending(self) -> tuple[Decision, ...]:
        return tuple(r.decision for r in self.results if r.verdict == "request")

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason, "items": [d.to_json() for d in self.items]}


def inspect(canonical: str) -> tuple[tuple[int, int] | None, int]:
    """(device, inode) and link count of an existing regular file, else (None, 1)."""
    try:
        info = os.stat(canonical)
    except (OSError, ValueError):
        return None, 1
    if not stat.S_ISREG(info.st_mode):
        return None, 1
    return (info.st_dev, info.st_ino), info.st_nlink
