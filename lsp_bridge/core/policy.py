"""The one policy engine: allow, request or deny, for every consumer.

Decisions follow PRODUCT.md "Decision semantics" (seed 001):

* ``[[paths]]`` rules are authoritative; with no matching rule a path is
  allowed inside the host baseline (``scope.Scope.union``) and denied outside.
* Exact file rules outrank directory rules; then the deepest anchor; then the
  longest literal prefix of the matching include. Ties: deny, request, allow.
* read/list/hash need ``read``; write and metadata need ``write``; delete needs
  ``delete`` (which inherits ``write``); rename needs ``delete`` on the source
  and ``write`` on the destination.
* A project-file ``allow`` outside the host baseline is reduced to ``request``.
* A symbolic link and its target are both decided; the rule governing the link
  must enable ``follow_symlinks`` (with no rule, links are followed inside the
  baseline unless version 1 said ``follow_symlinks = false``).
* Mutating an active configuration file is at least ``request``; so is mutating
  any protected target (``protected``: candidate configuration files, ``.git``,
  files editors and shells run, Root Guard's state), unless an exact-file user
  rule names that very path.
* User rules are a floor for project rules (``rules``).
* A rename also needs ``read`` on the source when the destination would be
  readable (a file the agent may not read cannot be renamed into view); version 1
  refuses a rename across roots.
* A read of a file with more than one hard link is denied when its inode is the
  inode of a file a deny rule covers inside the union (``hardlinks``).
* With ``worktrees = "request"`` any non-deny decision inside a sibling
  checkout becomes ``request``.
* An absolute path selects the root that contains it (the deepest folder); a
  relative path uses the first root; a call spanning roots whose policies
  differ is denied. A batch is decided whole: one deny denies it, one request
  makes all of it wait for approval.

``decide_target`` is a pure function of (configuration, scope, resolved path,
operation), with one exception kept at an edge: a read of a target whose ``Target``
says it has several hard links consults ``hardlinks.HardLinkIndex``, which walks the
directories below deny rules once (cached). ``decide`` adds the other I/O:
resolving symbolic links and reading the target's inode and link count.
"""

from __future__ import annotations

import os
import stat
from bisect import bisect_left
from collections.abc import Container, Iterable, Sequence
from functools import cached_property
from itertools import repeat

from lsp_bridge.core.paths import CASE_INSENSITIVE, fold, is_within, realpath
from lsp_bridge.core.protected import ProtectedAreas, default_areas, protected_reason
from lsp_bridge.core.record import dataclass, field, replace
from lsp_bridge.core.rules import CompiledRule, RuleSet
from lsp_bridge.core.scope import Scope
from lsp_bridge.core.settings import STRICTNESS, Config, PathRule

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up (core/record.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_bridge.core.hardlinks import HardLinkIndex
    from lsp_bridge.core.settings import Verdict

_ = PathRule  # re-exported for callers building rules

OPERATIONS = ("read", "write", "delete", "rename", "metadata")
_KNOWN_OPERATIONS = frozenset(OPERATIONS)
_NEEDS = {"read": "read", "write": "write", "metadata": "write", "delete": "delete"}
_MUTATING = {"write", "metadata", "delete", "rename"}
_DOTS = (".", "..")
_DOTS_SET = frozenset(_DOTS)


class PolicyInputError(ValueError):
    """A request the engine cannot even consider (bad op, empty path...)."""


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


@dataclass(frozen=True)
class Target:
    """A path as the engine sees it: canonical, plus where each link on the way sits."""

    canonical: str
    links: tuple[str, ...] = ()  # canonical locations of the symbolic links traversed
    loop: bool = False  # resolution met a symbolic link loop: nothing to authorize
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of an existing regular file
    nlink: int = 1


def _one_need(need: str, decision: Decision, granted: Container[tuple[str, str]]) -> ItemDecision:
    """One need on one path as a batch item: a ``request`` the session already granted is ``allow``."""
    verdict = decision.decision
    if verdict == "request" and (need, decision.path) in granted:
        part = Part(need, decision.path, decision, "allow")
        return ItemDecision(decision, (part,), "allow", f"allowed for this session earlier ({decision.reason})")
    return ItemDecision(decision, (Part(need, decision.path, decision, verdict),), verdict, decision.reason)


def inspect(canonical: str) -> tuple[tuple[int, int] | None, int]:
    """(device, inode) and link count of an existing regular file, else (None, 1)."""
    try:
        info = os.stat(canonical)
    except (OSError, ValueError):
        return None, 1
    if not stat.S_ISREG(info.st_mode):
        return None, 1
    return (info.st_dev, info.st_ino), info.st_nlink


# ---------------------------------------------------------------------------
# The engine


class Policy:
    """Decides accesses for one session: its scope and each root's configuration.

    ``configs`` pairs each editor folder with the configuration loaded for it
    (user file, its project file, environment). Folders sharing a project file
    share a policy.
    """

    def __init__(self, scope: Scope, configs: Sequence[tuple[str, Config]], *,
                 areas: ProtectedAreas | None = None):
        if not configs:
            raise ValueError("a policy needs at least one configuration")
        self.scope = scope
        self._rulesets: dict[int, RuleSet] = {}
        self._roots: list[tuple[str, RuleSet]] = []
        by_identity: dict[str | None, RuleSet] = {}
        for root, config in configs:
            ident = config.identity  # the same project file (or none): the same policy
            ruleset = by_identity.get(ident) or RuleSet(config, scope)
            by_identity[ident] = ruleset
            self._roots.append((root, ruleset))
        self._request_checkouts = tuple(fold(c) for c in scope.request_checkouts())
        self.version = configs[0][1].version
        user_file = next((c.user_file for _, c in configs if c.user_file), None)
        self.areas = areas if areas is not None else default_areas(user_file)
        if scope.admin_dirs:  # the repositories' admin directories (a worktree's may sit anywhere)
            admins = tuple(dict.fromkeys((*self.areas.admin_dirs, *(fold(a) for a in scope.admin_dirs))))
            self.areas = replace(self.areas, admin_dirs=admins)
        self._given = tuple(
            (os.path.normpath(e.given), e.path) for e in scope.union.entries if os.path.normpath(e.given) != e.path
        )
        # Every folded path something is anchored on: a child of a directory that is none of these
        # is decided by its directory's anchors (``decide_children``).
        anchored: set[str] = set(self._request_checkouts)
        anchored.update(fold(e.path) for e in scope.union.entries)
        anchored.update(fold(e.path) for e in scope.approval_only.entries)
        for root, ruleset in self._roots:
            anchored.add(fold(root))
            anchored.update(ruleset.anchors)
            anchored.update(ruleset.protected)
        self._anchored = frozenset(anchored)
        self._anchors_sorted = sorted(anchored)  # for the anchors directly below a directory (``_child_anchors``)
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._plain: dict[tuple[str, str], ItemDecision] = {}  # decide_plain's answers before session grants

    @cached_property
    def hardlinks(self) -> HardLinkIndex:
        """The hard-link index, set up when a file with several links is first decided
        (most sessions never decide one; a short command then skips its import)."""
        from lsp_bridge.core.hardlinks import HardLinkIndex

        return HardLinkIndex(self)

    def rulesets(self) -> list[RuleSet]:
        """Each distinct rule set in force (one per project file), in root order."""
        seen: list[RuleSet] = []
        for _, ruleset in self._roots:
            if all(ruleset is not s for s in seen):
                seen.append(ruleset)
        return seen

    # -- root selection ------------------------------------------------------

    def select(self, path: str) -> tuple[str, RuleSet]:
        """The deepest root containing ``path``; the first root otherwise."""
        if len(self._roots) == 1:
            return self._roots[0]
        best = None
        key = fold(path)
        for root, ruleset in self._roots:
            if is_within(key, fold(root)) and (best is None or len(root) > len(best[0])):
                best = (root, ruleset)
        return best or self._roots[0]

    def absolute(self, path: str) -> str:
        """``path`` made absolute: a relative path is taken from the first root.

        ``..`` is left for resolution: after a symbolic link it climbs from the
        link's target, as the kernel does, not from where the link sits.
        """
        if not isinstance(path, str) or not path or "\x00" in path:
            raise PolicyInputError(f"invalid path {path!r}")
        if not os.path.isabs(path):
            path = os.path.join(self._roots[0][0], path)
        return _squash_slashes(path)

    # -- resolution (the only I/O) --------------------------------------------

    def resolve(self, path: str) -> Target:
        """Canonicalise ``path``, recording every symbolic link met on the way."""
        lexical = self.absolute(path)
        for given, real in self._given:  # a root named through a link is trusted as named
            if is_within(lexical, given):
                lexical = real + lexical[len(given):]
                break
        try:
            real = realpath(lexical, loops=True)
        except OSError:  # a symbolic link loop
            return Target(lexical, loop=True)
        inode, nlink = inspect(real)
        if real == lexical:
            return Target(real, inode=inode, nlink=nlink)
        return Target(real, tuple(_links_on_the_way(lexical)), inode=inode, nlink=nlink)

    # -- decisions -----------------------------------------------------------

    def decide(self, op: str, path: str, dest: str | None = None) -> Decision:
        if op not in OPERATIONS:
            raise PolicyInputError(f"unknown operation {op!r} (expected one of {', '.join(OPERATIONS)})")
        if op == "rename":
            if dest is None:
                raise PolicyInputError("rename needs a destination")
            return self.decide_rename(self.resolve(path), self.resolve(dest))
        return self.decide_target(op, self.resolve(path))

    def rename_parts(self, source: Target, dest: Target) -> list[tuple[str, Decision]]:
        """(need, decision) for each part of a rename: delete on the source, write on the
        destination, and read on the source when the destination would be readable."""
        parts = [("delete", self.decide_target("delete", source, reported_op="rename")),
                 ("write", self.decide_target("write", dest, reported_op="rename"))]
        readable = self.decide_target("read", dest, reported_op="rename").decision != "deny"
        if readable:
            read = self.decide_target("read", source, reported_op="rename")
            if read.decision != "allow":
                read = Decision(read.decision, read.path, "rename", read.rule,
                                f"the destination would be readable, so renaming needs read on the source: {read.reason}",
                                read.rule_source, read.root)
            parts.append(("read", read))
        return parts

    def rename_conflict(self, source: Target, dest: Target) -> str | None:
        """Why a rename cannot go ahead whatever the rules say (spans roots)."""
        span = self.span_conflict([source.canonical, dest.canonical])
        if span:
            return span
        if self.version == 1 and self.select(source.canonical)[0] != self.select(dest.canonical)[0]:
            return "version 1 configuration: a rename across roots is refused"
        return None

    def decide_rename(self, source: Target, dest: Target) -> Decision:
        parts = self.rename_parts(source, dest)
        src, dst = parts[0][1], parts[1][1]
        span = self.rename_conflict(source, dest)
        if span:
            return Decision("deny", src.path, "rename", None, span, None, src.root, dst)
        pool = [src, dst] + [d for need, d in parts[2:]]
        worst = max(pool, key=lambda d: STRICTNESS[d.decision])
        if worst is not src and worst is not dst:
            reason = worst.reason
            return Decision(worst.decision, src.path, "rename", worst.rule, reason, worst.rule_source, src.root, dst)
        reason = f"source: {src.reason}; destination: {dst.reason}"
        return Decision(worst.decision, src.path, "rename", worst.rule, reason, worst.rule_source, src.root, dst)

    def decide_target(self, op: str, target: Target, *, reported_op: str | None = None,
                      fast: bool = False) -> Decision:
        """Pure decision for an already-resolved target.

        With ``fast``, a target with no link on the way that is no anchor itself takes
        its directory's share of the decision (``_child_point``, as ``decide_children``
        does): the same Decision, rule and reason included (``tests/test_policy_children.py``).
        """
        need = _NEEDS[op]
        shown_op = reported_op or op
        point = self._child_point(op, target.canonical) if fast and not target.links and not target.loop else None
        if point is not None:
            verdict, rule, reason, root = point
        else:
            root, ruleset = self.select(target.canonical)
            if target.loop:
                return Decision("deny", target.canonical, shown_op, None,
                                "a symbolic link loop: the path cannot be resolved", None, root)
            verdict, rule, reason = self._decide_point(target.canonical, need, ruleset, op)
        if target.links and verdict != "deny":
            for link in target.links:
                link_root, link_rules = self.select(link)
                lv, lrule, lreason = self._decide_point(link, need, link_rules, op)
                if lv == "deny":
                    verdict, rule, reason = "deny", lrule, f"the symbolic link {link} is not authorized: {lreason}"
                    break
                if not self._may_follow(link, need, link_rules):
                    verdict, rule = "deny", lrule
                    reason = f"{link} is a symbolic link and the rule governing it does not set follow_symlinks"
                    break
                if STRICTNESS[lv] > STRICTNESS[verdict]:
                    verdict, rule, reason = lv, lrule, f"through the symbolic link {link}: {lreason}"
        if need == "read" and verdict != "deny" and target.inode is not None and target.nlink > 1:
            why = self.hardlinks.denied(target.inode, target.canonical)
            if why is not None:
                verdict, rule, reason = "deny", None, why
        return Decision(verdict, target.canonical, shown_op, rule.id if rule else None, reason,
                        rule.source if rule else None, root)

    def decide_batch(self, items: Iterable[tuple[Any, ...]], *, granted: Container[tuple[str, str]] = (),
                     fast: bool = False) -> BatchDecision:
        """Decide every item before anything happens; the batch stands or falls whole.

        An item is ``(op, path)`` or ``("rename", path, dest)``; ``op`` may be a
        tuple of operations needed on the same path (an edit reads and writes);
        a path is a string (resolved here) or an already-resolved ``Target``.
        ``granted`` holds the session's "allow for this session" answers as
        ``(need, canonical path)`` pairs: a ``request`` whose every requested
        part is granted becomes ``allow``; a ``deny`` never changes.

        Order: a call spanning roots whose policies differ is denied; then the
        first denied item denies the batch; then any item still at ``request``
        makes the whole batch wait for one approval; else it is allowed.

        ``fast``: each target's point decision may come from its directory's share
        (``decide_target(fast=True)``); the answers are the same.
        """
        results = [self._decide_item(item, granted, fast) for item in items]
        if len(results) == 1 and len(results[0].parts) == 1:  # one need on one path: nothing can span
            only = results[0]
            culprit = None if only.verdict == "allow" else 0
            return BatchDecision(only.verdict, (only.decision,), only.reason, (only,), culprit)
        decisions = tuple(r.decision for r in results)
        done = tuple(results)
        if not results:
            return BatchDecision("deny", (), "an empty batch decides nothing")
        paths = list(dict.fromkeys(p.path for r in results for p in r.parts))
        span = self.span_conflict(paths) if len(paths) > 1 else None
        if span:
            return BatchDecision("deny", decisions, span, done, None, True)
        single = len(results) == 1
        for index, result in enumerate(results):
            if result.verdict == "deny":
                reason = result.reason if single else f"{result.decision.path} is denied: {result.reason}"
                return BatchDecision("deny", decisions, reason, done, index)
        pending = [i for i, r in enumerate(results) if r.verdict == "request"]
        if pending:
            reason = results[pending[0]].reason if len(pending) == 1 else (
                f"{len(pending)} of {len(results)} targets need approval")
            return BatchDecision("request", decisions, reason, done, pending[0])
        reason = results[0].reason if single else "every target is allowed"
        return BatchDecision("allow", decisions, reason, done)

    def _decide_item(self, item: tuple[Any, ...], granted: Container[tuple[str, str]],
                     fast: bool = False) -> ItemDecision:
        op, path, dest = item if len(item) == 3 else (*item, None)[:3]
        ops = (op,) if isinstance(op, str) else tuple(op)
        if not ops or not _KNOWN_OPERATIONS.issuperset(ops):
            raise PolicyInputError(f"unknown operation {op!r} (expected one of {', '.join(OPERATIONS)})")
        if "rename" in ops:
            if len(ops) != 1 or dest is None:
                raise PolicyInputError("rename needs a destination and no other operation")
            source, target = self._as_target(path), self._as_target(dest)
            whole = self.decide_rename(source, target)
            pieces = self.rename_parts(source, target)  # delete, write, and read when the destination is readable
            if whole.decision == "deny" and all(d.decision != "deny" for _, d in pieces):
                pieces[0] = ("delete", whole)  # refused as a whole (spans roots; version 1 across roots)
        elif len(ops) == 1:  # the common case, kept short: one need on one path
            return _one_need(_NEEDS[ops[0]], self.decide_target(ops[0], self._as_target(path), fast=fast), granted)
        else:
            target = self._as_target(path)
            pieces = [(_NEEDS[o], self.decide_target(o, target, fast=fast)) for o in ops]
            whole = max((d for _, d in pieces), key=lambda d: STRICTNESS[d.decision])
        parts = tuple(
            Part(need, d.path, d, "allow" if d.decision == "request" and (need, d.path) in granted else d.decision)
            for need, d in pieces
        )
        asked = [p for p in parts if p.decision.decision == "request"]
        explained = max(STRICTNESS[p.decision.decision] for p in parts) == STRICTNESS[whole.decision]
        if whole.decision == "request" and asked and explained and all(p.verdict == "allow" for p in asked):
            return ItemDecision(whole, parts, "allow", f"allowed for this session earlier ({whole.reason})")
        return ItemDecision(whole, parts, whole.decision, whole.reason)

    def decide_plain(self, op: str, canonical: str, granted: Container[tuple[str, str]] = ()) -> ItemDecision | None:
        """``_decide_item((op, Target(canonical)), granted, fast=True)`` for a path with no link on the
        way and one link to its inode, from its directory's share (``_child_point``); None when that
        share cannot vouch for it (an anchor, a protected target of a mutation): the caller then takes
        the full engine. The MCP tools' plain reads use it (``tests/test_plain_read.py``)."""
        key = (op, canonical)
        item = self._plain.get(key)
        if item is None:  # the answer depends on the rules and the path alone: kept while this policy lives
            point = self._child_point(op, canonical)
            if point is None:
                return None
            verdict, rule, reason, root = point
            rule_id, source = (rule.id, rule.source) if rule else (None, None)
            item = _one_need(_NEEDS[op], Decision(verdict, canonical, op, rule_id, reason, source, root), ())
            if len(self._plain) >= _MAX_PLAIN:
                self._plain.clear()
            self._plain[key] = item
        if item.verdict == "request" and granted:
            return _one_need(_NEEDS[op], item.decision, granted)
        return item

    def decide_granted(self, op: str, target: Target, granted: Container[tuple[str, str]] = ()) -> str:
        """The verdict for one resolved path after session grants (listings and searches filter with it).

        The compiled fast path: a target with no link on the way is decided
        from its directory's anchors (``_slot``, kept per directory), as
        ``decide_children`` decides a listing; anything else, and any child the
        fast path cannot vouch for, takes the full engine. Same answers:
        ``tests/test_policy_children.py``.
        """
        if not target.links and not target.loop and op in _NEEDS:
            path = target.canonical
            parent, _, name = path.rpartition(os.sep)
            if parent and name:
                slot = self._slots.get((parent, op)) or self._slot(parent, op)
                verdict = self._fast_verdict(op, path, slot, target.nlink)
                if verdict is not None:
                    if verdict == "request" and (_NEEDS[op], path) in granted:
                        return "allow"
                    return verdict
        return self._decide_item((op, target), granted).verdict

    def _slot(self, directory: str, op: str) -> _Slot:
        """What deciding ``op`` on a child of canonical ``directory`` needs, computed once per directory."""
        slot = self._slots.get((directory, op))
        if slot is None:
            if len(self._slots) >= _MAX_SLOTS:
                self._slots.clear()
            need = _NEEDS[op]
            _, ruleset = self.select(directory)
            candidates, globbed = ruleset.child_candidates(fold(directory), need)
            fixed = None if globbed else ruleset.child_winner("", candidates)
            slot = self._slots[(directory, op)] = _Slot(ruleset, candidates, globbed, fixed)
        return slot

    def _child_point(self, op: str, path: str, slot: _Slot | None = None
                     ) -> tuple[Verdict, PathRule | None, str, str] | None:
        """``(verdict, rule, reason, root)`` of canonical ``path`` from its directory's slot (``slot``
        when the caller has it), as ``select`` + ``_decide_point`` give them; None when the path needs
        the full engine (it is an anchor, or a protected target of a mutation). The hard-link check
        is the caller's."""
        key = path.casefold() if CASE_INSENSITIVE else path  # fold(), inlined: this runs per decision
        if key in self._anchored or (op in _MUTATING and protected_reason(path, self.areas)):
            return None
        if slot is None:
            parent, _, name = path.rpartition(os.sep)
            if not parent or not name:
                return None
            slot = self._slots.get((parent, op)) or self._slot(parent, op)
        win = slot.ruleset.child_winner(key, slot.candidates) if slot.globbed else slot.fixed
        mark = (id(win[0]), win[1]) if win is not None else None
        point = slot.points.get(mark)
        if point is None:
            verdict, rule, reason = self._point(win, path, _NEEDS[op], slot.ruleset, op)
            point = slot.points[mark] = (verdict, rule, reason, self.select(path)[0])
        return point

    def _fast_verdict(self, op: str, path: str, slot: _Slot, nlink: int = 1) -> Verdict | None:
        """The engine's verdict for child ``path`` from its directory's slot, None when the child needs
        the full engine: it is an anchor itself, a protected target of a mutation, or a read of a file
        with several hard links."""
        if nlink > 1 and _NEEDS[op] == "read":
            return None
        point = self._child_point(op, path, slot)
        return None if point is None else point[0]

    def decide_children(
        self, op: str, directory: str, names: Iterable[str], granted: Container[tuple[str, str]] = (),
        files: Sequence[tuple[tuple[int, int] | None, int]] | None = None,
    ) -> list[Verdict]:
        """``decide_granted(op, Target(directory/name), granted)`` for each plain entry of a directory.

        ``directory`` is canonical and every name is an entry that is not a
        symbolic link (a listing's files and directories), so each child's
        canonical path is ``directory/name`` with no link on the way. A child
        that is itself an anchor (a rule, a union entry, a root, a protected
        file, a sibling checkout) takes the full engine; every other child
        matches exactly its directory's anchors, so only their globs are tried
        per name, and the rest of the decision (baseline, approval-only areas,
        sibling checkouts) is the directory's, computed once per winning rule.
        Two checks depend on the child itself and send it to the full engine:
        a mutation of a protected target (``protected_reason``: ``.git``,
        ``.envrc``...), and a read of a regular file with several hard links
        (``files`` gives each name's ``(inode, nlink)`` as ``inspect`` would).
        Listings use this: one directory of 1,000 entries costs one lookup of
        the anchors, not 1,000. ``tests/test_policy_children.py`` checks it
        against the full engine.
        """
        if op not in _NEEDS:
            raise PolicyInputError(f"unknown operation {op!r} for a listing")
        need = _NEEDS[op]
        base = directory if directory.endswith(os.sep) else directory + os.sep
        slot = self._slot(directory.rstrip(os.sep) or os.sep, op)
        verdicts = []
        # A read of a child that is no anchor and has one link is decided by the directory's
        # fixed winner alone (``_fast_verdict`` with nothing per child left to ask): once.
        uniform = need == "read" and not slot.globbed
        if uniform and not CASE_INSENSITIVE:
            names = names if isinstance(names, list) else list(names)
            shared_all = self._shared_children(op, base, slot, names, granted, files)
            if shared_all is not None:
                return shared_all
        shared: Verdict | None = None
        anchored = self._anchored
        sep = os.sep
        pairs = zip(names, files, strict=True) if files is not None else zip(names, repeat((None, 1)))
        for name, (inode, nlink) in pairs:
            path = base + name
            verdict = None
            if name and sep not in name and name not in _DOTS:
                if uniform and nlink <= 1 and (path.casefold() if CASE_INSENSITIVE else path) not in anchored:
                    if shared is None:
                        shared = self._fast_verdict(op, path, slot, nlink)
                    verdict = shared
                else:
                    verdict = self._fast_verdict(op, path, slot, nlink)
            if verdict is None:
                verdicts.append(self._decide_item((op, Target(path, inode=inode, nlink=nlink)), granted).verdict)
                continue
            if verdict == "request" and (need, path) in granted:
                verdict = "allow"
            verdicts.append(verdict)
        return verdicts

    def _shared_children(self, op: str, base: str, slot: _Slot, names: list[str],
                         granted: Container[tuple[str, str]],
                         files: Sequence[tuple[tuple[int, int] | None, int]] | None) -> list[Verdict] | None:
        """``decide_children`` for a read where no child can differ: one verdict, no work per name.

        None (the caller decides name by name) when a name is not a plain entry name, when
        some child is an anchor itself (``_child_anchors``: a rule, root, union entry or
        protected path directly below the directory), when a file has several hard links,
        or when the shared verdict is ``request`` and session grants may turn single
        children into ``allow``.
        """
        if not names:
            return []
        anchors = slot.children
        if anchors is None:
            anchors = slot.children = self._child_anchors(base)
        if anchors and not anchors.isdisjoint(names):
            return None
        if files is not None and max(nlink for _, nlink in files) > 1:
            return None
        if "" in names or not _DOTS_SET.isdisjoint(names) or os.sep in "\0".join(names):
            return None
        shared = self._fast_verdict(op, base + names[0], slot, 1)
        if shared is None or (shared == "request" and granted):
            return None
        return [shared] * len(names)

    def _child_anchors(self, base: str) -> frozenset[str]:
        """The names of the anchors directly below the directory ``base`` (ends with a separator)."""
        found = []
        anchors = self._anchors_sorted
        index = bisect_left(anchors, base)
        while index < len(anchors) and anchors[index].startswith(base):
            rest = anchors[index][len(base):]
            if rest and os.sep not in rest:
                found.append(rest)
            index += 1
        return frozenset(found)

    def _as_target(self, path: str | Target) -> Target:
        return path if isinstance(path, Target) else self.resolve(path)

    # -- internals -----------------------------------------------------------

    def _decide_point(self, path: str, need: str, ruleset: RuleSet, op: str) -> tuple[Verdict, PathRule | None, str]:
        return self._point(ruleset.winner(fold(path), need), path, need, ruleset, op)

    def _point(
        self, win: tuple[CompiledRule, Verdict] | None, path: str, need: str, ruleset: RuleSet, op: str
    ) -> tuple[Verdict, PathRule | None, str]:
        """The decision at ``path`` once its winning rule is known.

        ``decide_children`` reuses one answer for every non-anchored child of a
        directory with the same winner: ``path`` may enter here only through
        lookups keyed by anchors in ``self._anchored`` (union entries, approval
        areas, sibling checkouts, protected files) and through
        ``protected_reason``, which ``decide_children`` asks per child. A new
        path-dependent check must be added there too.
        """
        key = fold(path)
        if win is not None:
            compiled, verdict = win
            rule = compiled.rule
            where = rule.source + (": " + rule.file if rule.file else "")
            reason = f"rule {rule.id!r} ({where}) sets {need} = {rule_verdict(rule, need)}"
            if compiled.reduced and rule_verdict(rule, need) == "allow":
                reason += "; a project file cannot allow beyond the host baseline, so approval is required"
        elif (entry := self.scope.union.entry_for(path)) is not None:
            rule, verdict = None, "allow"
            reason = f"inside the host baseline ({entry.reason}: {entry.path})"
        elif (area := self.scope.approval_only.entry_for(path)) is not None:
            rule, verdict = None, "request"
            reason = f"{area.reason} in a project file, which cannot widen access: approval required"
        else:
            rule, verdict = None, "deny"
            reason = "outside every root and no rule allows it"
        if verdict != "deny" and self._request_checkouts and self._in_request_worktree(path):
            if verdict == "allow":
                reason += "; inside a sibling worktree and worktrees = \"request\""
            verdict = "request"
        if op in _MUTATING and key in ruleset.protected and verdict == "allow":
            verdict, reason = "request", f"{path} is an active Root Guard configuration file; changing it needs approval"
        if op in _MUTATING and verdict == "allow":
            why = protected_reason(path, self.areas)
            named = (win is not None and win[0].rule.source == "user" and not win[0].rule.includes
                     and win[0].anchor == key)  # a user rule naming this very path
            if why is not None and not named:
                verdict, reason = "request", f"a protected target: {why}; changing it needs approval"
        return verdict, (rule if win is not None else None), reason

    def _in_request_worktree(self, path: str) -> bool:
        key = fold(path)
        return any(is_within(key, c) for c in self._request_checkouts)

    def _may_follow(self, link: str, need: str, ruleset: RuleSet) -> bool:
        key = fold(link)
        win = ruleset.winner(key, need)
        if win is not None:
            return win[0].rule.follow_symlinks
        return ruleset.config.follow_symlinks

    def span_conflict(self, paths: Sequence[str]) -> str | None:
        """Why a call touching ``paths`` may not go ahead as one (roots with different policies)."""
        selected = {id(self.select(p)[1]): self.select(p) for p in paths}
        if len(selected) <= 1:
            return None
        roots = ", ".join(sorted(root for root, _ in selected.values()))
        return f"the call spans roots whose policies differ ({roots}); split it per root"


_MAX_PLAIN = 4096  # paths whose plain decision is kept (a few MB at most)
_MAX_SLOTS = 4096  # directories whose fast-path slot is kept (the policy is rebuilt when anything changes)


@dataclass
class _Slot:
    """One directory's share of every child's decision for one operation (``Policy._slot``)."""

    ruleset: RuleSet
    candidates: list[tuple[CompiledRule, Verdict, int, tuple[int, ...] | None]]
    globbed: bool
    fixed: tuple[CompiledRule, Verdict] | None
    # The whole point decision (verdict, rule, reason, selected root) per winner: ``_child_point``.
    points: dict[tuple[int, str] | None, tuple[Verdict, PathRule | None, str, str]] = field(default_factory=dict)
    # The names of the anchors directly below the directory (``Policy._child_anchors``), once computed.
    children: frozenset[str] | None = None


def _squash_slashes(path: str) -> str:
    """Drop empty and ``.`` components (always safe); keep ``..`` (never safe lexically)."""
    parts = [p for p in path.split(os.sep) if p not in ("", ".")]
    return os.sep + os.sep.join(parts)


def _below(path: str, ancestor: str) -> str:
    """``path`` relative to its ancestor, "" for the ancestor itself (no I/O, no relpath)."""
    if path == ancestor:
        return ""
    start = len(ancestor) if ancestor.endswith(os.sep) else len(ancestor) + 1
    return path[start:]


def rule_verdict(rule: PathRule, need: str) -> str | None:
    verdict: Verdict | None = getattr(rule, need)
    return verdict


def _links_on_the_way(lexical: str) -> list[str]:
    """Canonical locations of the symbolic links met resolving ``lexical``."""
    links: list[str] = []
    current = os.sep
    parts = [p for p in lexical.split(os.sep) if p]
    parts.reverse()  # a stack: next component last
    while parts:
        part = parts.pop()
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            info = os.lstat(candidate)
        except OSError:
            return links  # not there yet: the rest is lexical below a canonical parent
        if not stat.S_ISLNK(info.st_mode):
            current = candidate
            continue
        if len(links) >= 40:  # a loop; realpath has already given up the same way
            return links
        links.append(candidate)
        target = os.readlink(candidate)
        if os.path.isabs(target):
            current = os.sep
        parts.extend(reversed([p for p in target.split(os.sep) if p]))
    return links


def oracle_inside(path: str, roots: Sequence[str]) -> bool:
    """The naive union check of seed 000 (``roots.some(...)``), for mirrors and benchmarks."""
    return any(path == r or path.startswith(r + os.sep) for r in roots)

