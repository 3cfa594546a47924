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

``decide_target`` is the one decision every route takes (the CLI, the language
server, every MCP tool, listings and searches, batches, the ``rootguard run``
profile, trace and the agent hooks): a pure function of (configuration, scope,
resolved target, operation), with one exception kept at an edge: a read of a target
whose ``Target`` says it has several hard links consults ``hardlinks.HardLinkIndex``,
which walks the directories below deny rules (rebuilt every ``hardlinks.TTL``
seconds). Its answers are kept per question (``memo.DecisionMemo``) while this policy
lives, except those that consulted that index; nothing else decides. ``decide`` adds
the other I/O: resolving symbolic links and reading the target's inode and link count.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Container, Iterable, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lsp_bridge.core.decision import (
    MUTATING,
    NEEDS,
    OPERATIONS,
    BatchDecision,
    Decision,
    ItemDecision,
    Part,
    PolicyInputError,
    Target,
    inspect,
)
from lsp_bridge.core.git_access import lifts_protection
from lsp_bridge.core.memo import DEFAULT_LIMIT, DecisionMemo
from lsp_bridge.core.paths import fold, is_within, realpath
from lsp_bridge.core.protected import ProtectedAreas, default_areas, protected_reason
from lsp_bridge.core.rules import RuleSet
from lsp_bridge.core.scope import Scope
from lsp_bridge.core.settings import STRICTNESS, Config, PathRule

if TYPE_CHECKING:
    from lsp_bridge.core.hardlinks import HardLinkIndex
    from lsp_bridge.core.settings import Verdict

__all__ = [  # the engine's records live in core/decision.py; callers may import them from here
    "OPERATIONS", "BatchDecision", "Decision", "ItemDecision", "Part", "PathRule", "Policy", "PolicyInputError",
    "Target", "inspect", "oracle_inside", "rule_verdict",
]

_KNOWN_OPERATIONS = frozenset(OPERATIONS)
LISTINGS_KEPT = 256  # listings whose verdicts are kept (decide_children); each holds its names


def _one_need(need: str, decision: Decision, granted: Container[tuple[str, str]]) -> ItemDecision:
    """One need on one path as a batch item: a ``request`` the session already granted is ``allow``."""
    verdict = decision.decision
    if verdict == "request" and (need, decision.path) in granted:
        part = Part(need, decision.path, decision, "allow")
        return ItemDecision(decision, (part,), "allow", f"allowed for this session earlier ({decision.reason})")
    return ItemDecision(decision, (Part(need, decision.path, decision, verdict),), verdict, decision.reason)


# ---------------------------------------------------------------------------
# The engine


class Policy:
    """Decides accesses for one session: its scope and each root's configuration.

    ``configs`` pairs each editor folder with the configuration loaded for it
    (user file, its project file, environment). Folders sharing a project file
    share a policy.
    """

    def __init__(self, scope: Scope, configs: Sequence[tuple[str, Config]], *,
                 areas: ProtectedAreas | None = None, memo_size: int = DEFAULT_LIMIT):
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
        self._memo: DecisionMemo[Decision] = DecisionMemo(memo_size)  # 0: nothing kept (benchmarks, tests)
        # A listing's verdicts, kept as its entries' are (fewer: each holds a whole directory's names).
        self._listings: DecisionMemo[tuple[Verdict, ...]] = DecisionMemo(min(memo_size, LISTINGS_KEPT))

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

    def decide_target(self, op: str, target: Target, *, reported_op: str | None = None) -> Decision:
        """The decision for an already-resolved target: the one every route takes.

        A pure function of this policy and its arguments, kept per question while the
        policy lives (``memo``); a read of a file with several hard links is decided
        afresh each time, because it asks the hard-link index, which changes with the disk.
        """
        key = (op, reported_op, target)
        decision = self._memo.get(key)
        if decision is None:
            decision = self._decide_target(op, target, reported_op)
            if not (target.nlink > 1 and NEEDS[op] == "read"):
                self._memo.put(key, decision)
        return decision

    def _decide_target(self, op: str, target: Target, reported_op: str | None) -> Decision:
        need = NEEDS[op]
        shown_op = reported_op or op
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
                if not _may_follow(link, need, link_rules):
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

    def decide_batch(self, items: Iterable[tuple[Any, ...]], *,
                     granted: Container[tuple[str, str]] = ()) -> BatchDecision:
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
        """
        results = [self._decide_item(item, granted) for item in items]
        if not results:
            return BatchDecision("deny", (), "an empty batch decides nothing")
        decisions = tuple(r.decision for r in results)
        done = tuple(results)
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

    def _decide_item(self, item: tuple[Any, ...], granted: Container[tuple[str, str]]) -> ItemDecision:
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
        elif len(ops) == 1:  # one need on one path
            return _one_need(NEEDS[ops[0]], self.decide_target(ops[0], self._as_target(path)), granted)
        else:
            target = self._as_target(path)
            pieces = [(NEEDS[o], self.decide_target(o, target)) for o in ops]
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

    def decide_granted(self, op: str, target: Target, granted: Container[tuple[str, str]] = ()) -> Verdict:
        """The verdict for one resolved target after session grants (listings and searches filter with it):
        ``decide_batch([(op, target)], granted)``'s, without the batch's records."""
        if op not in NEEDS:
            return self._decide_item((op, target), granted).verdict  # rename, or an error to raise
        decision = self.decide_target(op, target)
        if decision.decision == "request" and (NEEDS[op], decision.path) in granted:
            return "allow"
        return decision.decision

    def decide_children(
        self, op: str, directory: str, names: Iterable[str], granted: Container[tuple[str, str]] = (),
        files: Sequence[tuple[tuple[int, int] | None, int]] | None = None,
    ) -> list[Verdict]:
        """``decide_granted(op, Target(directory/name, inode, nlink), granted)`` for each entry of a listing.

        ``directory`` is canonical and every name is an entry that is not a symbolic
        link, so each child's canonical path is ``directory/name``; ``files`` gives each
        name's ``(inode, nlink)`` as ``inspect`` would (None: one link, no inode).

        The verdicts before grants are kept per (operation, directory, names, ``files``) while
        this policy lives, as ``decide_target`` keeps each entry's: an unchanged listing is not
        decided entry by entry again. Not kept when a read asks the hard-link index.
        """
        if op not in NEEDS:
            raise PolicyInputError(f"unknown operation {op!r} for a listing")
        base = directory if directory.endswith(os.sep) else directory + os.sep
        names = tuple(names)
        stats = None if files is None else tuple(files)
        key = (op, base, names, stats)
        verdicts = self._listings.get(key)
        if verdicts is None:
            if stats is None:
                targets = [Target(base + name) for name in names]
            else:
                targets = [Target(base + name, inode=inode, nlink=nlink)
                           for name, (inode, nlink) in zip(names, stats, strict=True)]
            verdicts = tuple(self.decide_target(op, target).decision for target in targets)
            if not (NEEDS[op] == "read" and any(t.nlink > 1 for t in targets)):
                self._listings.put(key, verdicts)
        if not granted or "request" not in verdicts:
            return list(verdicts)
        need = NEEDS[op]  # as decide_granted: a child's decision path is base + name (no link on the way)
        return ["allow" if v == "request" and (need, base + name) in granted else v
                for v, name in zip(verdicts, names, strict=True)]

    def _as_target(self, path: str | Target) -> Target:
        return path if isinstance(path, Target) else self.resolve(path)

    # -- internals -----------------------------------------------------------

    def _decide_point(self, path: str, need: str, ruleset: RuleSet, op: str) -> tuple[Verdict, PathRule | None, str]:
        """The decision at canonical ``path`` itself (no link on the way, no hard link): the most
        specific rule (``RuleSet.winner``: the ranking, the user floor), else the baseline; then the
        sibling worktrees, the active configuration files and the protected targets."""
        key = fold(path)
        win = ruleset.winner(key, need)
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
        if verdict != "deny" and self._request_checkouts and _in_any(path, self._request_checkouts):
            if verdict == "allow":
                reason += "; inside a sibling worktree and worktrees = \"request\""
            verdict = "request"
        if op in MUTATING and key in ruleset.protected and verdict == "allow":
            verdict, reason = "request", f"{path} is an active Root Guard configuration file; changing it needs approval"
        if op in MUTATING and verdict == "allow":
            why = protected_reason(path, self.areas)
            named = (win is not None and win[0].rule.source == "user" and not win[0].rule.includes
                     and win[0].anchor == key)  # a user rule naming this very path
            if win is not None and lifts_protection(win[0].rule, win[0].anchor, key, need):
                why = None  # git = "write": below the git directory, the built-in git-code rule keeps code read-only
            if why is not None and not named:
                verdict, reason = "request", f"a protected target: {why}; changing it needs approval"
        return verdict, (rule if win is not None else None), reason

    def span_conflict(self, paths: Sequence[str]) -> str | None:
        """Why a call touching ``paths`` may not go ahead as one (roots with different policies)."""
        selected = {id(self.select(p)[1]): self.select(p) for p in paths}
        if len(selected) <= 1:
            return None
        roots = ", ".join(sorted(root for root, _ in selected.values()))
        return f"the call spans roots whose policies differ ({roots}); split it per root"


def _in_any(path: str, checkouts: Iterable[str]) -> bool:
    """Whether canonical ``path`` lies in one of ``checkouts`` (folded paths)."""
    key = fold(path)
    return any(is_within(key, c) for c in checkouts)


def _may_follow(link: str, need: str, ruleset: RuleSet) -> bool:
    """Whether the rule set lets a link be followed for ``need`` (its winning rule's setting, else the file's)."""
    key = fold(link)
    win = ruleset.winner(key, need)
    if win is not None:
        return win[0].rule.follow_symlinks
    return ruleset.config.follow_symlinks


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

