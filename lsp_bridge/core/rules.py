"""``[[paths]]`` rules compiled for matching: anchors, globs and specificity.

Specificity orders matching rules (seed 001): an exact file rule outranks a
directory rule; then the deepest anchor; then the longest literal prefix of
the include that matched. Globs use the one dialect of ``globs`` (gitignore with
``**`` and ``{a,b}``), matched against the path relative to the anchor; an
exclusion removes a path from its rule even when an include matches it.

Layering: user rules are a floor. Where the most specific rule comes from a project
file and the most specific *floor* rule (user, built in) is stricter, the floor
rule stands: a project file can make a decision stricter, never looser.

Toolchain rules (source ``toolchain``: the package store and the configuration files
above a narrow root its tools read, ``core/toolchain.py``) only fill gaps: one decides
a path only when no configured rule matches it at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_bridge.core.globs import GlobSet, literal_prefix
from lsp_bridge.core.paths import PrefixIndex, depth, fold, is_within, relative_to
from lsp_bridge.core.scope import Scope
from lsp_bridge.core.settings import STRICTNESS, Config, PathRule

if TYPE_CHECKING:
    from lsp_bridge.core.settings import Verdict
    from lsp_bridge.core.union import Union

Specificity = tuple[int, int, int]
_ = literal_prefix  # re-exported
# Sources whose rules form the floor a project file cannot loosen (PRODUCT.md "Layering").
FLOOR_SOURCES = frozenset({"builtin", "user", "environment", "session", "git"})


def reduced_to_request(rule: PathRule, anchor: str, union: Union) -> bool:
    """Whether ``rule``'s ``allow`` at ``anchor`` becomes ``request``: a project file's rule outside the host
    baseline cannot widen access (PRODUCT.md "Layering"). The one place this is decided: the engine's
    compiled rules and the editor's information diagnostic both ask here."""
    return rule.source == "project" and not union.contains(anchor)


@dataclass(frozen=True)
class CompiledRule:
    rule: PathRule
    anchor: str  # folded canonical anchor (possibly remapped onto a worktree)
    exact: bool
    excludes: GlobSet
    includes: GlobSet  # alternatives, longest literal prefix first
    reduced: bool  # a project allow outside the host baseline: allow becomes request
    anchor_depth: int

    def matches(self, rel: str) -> bool:
        """Whether the rule covers ``rel`` (the path below the anchor, "" for the anchor)."""
        return self.specificity(rel) is not None

    def specificity(self, rel: str) -> Specificity | None:
        """None when the rule does not match ``rel`` (the path below the anchor)."""
        if self.exact:
            return (1, self.anchor_depth, 0) if rel == "" else None
        if rel and self.excludes and self.excludes.matches(rel):
            return None
        if not self.includes:
            return (0, self.anchor_depth, 0)
        if not rel:
            return None
        length = self.includes.best(rel)
        return None if length is None else (0, self.anchor_depth, length)

    def verdict(self, need: str) -> Verdict | None:
        verdict: Verdict | None = getattr(self.rule, need)
        if verdict == "allow" and self.reduced:
            return "request"
        return verdict


class RuleSet:
    """One configuration's rules, indexed by anchor so a lookup costs O(depth)."""

    def __init__(self, config: Config, scope: Scope):
        self.config = config
        self.protected = frozenset(fold(p) for p in config.files)
        by_anchor: dict[str, list[CompiledRule]] = {}
        for rule in (*config.paths, *scope.git_rules):  # [workspace] git's built-in rules (core/git_access.py)
            exact = rule.is_file and not rule.includes  # resolved when loading: compilation reads no disk
            excludes = GlobSet(rule.excludes)
            includes = GlobSet(rule.includes)
            for anchor in self._anchors(rule, scope):
                reduced = reduced_to_request(rule, anchor, scope.union)
                compiled = CompiledRule(rule, anchor, exact, excludes, includes, reduced, depth(anchor))
                by_anchor.setdefault(anchor, []).append(compiled)
        self._index: PrefixIndex[list[CompiledRule]] = PrefixIndex(by_anchor)
        self.compiled: tuple[CompiledRule, ...] = tuple(c for group in by_anchor.values() for c in group)
        """Every rule at every anchor (worktree remappings included), for consumers that
        enumerate rules rather than decide one path (the sandbox profile)."""

    @staticmethod
    def _anchors(rule: PathRule, scope: Scope) -> list[str]:
        """The rule's anchor, plus its remapping onto each sibling worktree."""
        anchors = [fold(rule.anchor)]
        if not rule.relative:
            return anchors
        for checkout, sibling, mode in scope.remaps:
            if mode != "ignore" and is_within(rule.anchor, checkout):
                offset = relative_to(rule.anchor, checkout)
                remapped = fold(os.path.normpath(os.path.join(sibling, offset)) if offset else sibling)
                if remapped not in anchors:
                    anchors.append(remapped)
        return anchors

    @property
    def anchors(self) -> frozenset[str]:
        """Every folded anchor a rule sits on."""
        return self._index.keys()

    def winner(self, key: str, need: str) -> tuple[CompiledRule, Verdict] | None:
        """The most specific rule deciding ``need`` for folded path ``key``."""
        if not self._index:
            return None
        best: tuple[CompiledRule, Verdict] | None = None
        floor: tuple[CompiledRule, Verdict] | None = None
        gap: tuple[CompiledRule, Verdict] | None = None
        best_rank = floor_rank = gap_rank = None
        for probe, candidates in self._index.matches(key):
            rel = "" if probe == key else key[len(probe) + (0 if probe.endswith(os.sep) else 1):]
            for compiled in candidates:
                verdict = compiled.verdict(need)
                if verdict is None:
                    continue
                spec = compiled.specificity(rel)
                if spec is None:
                    continue
                rank = (*spec, STRICTNESS[verdict])
                if compiled.rule.source == "toolchain":  # fills a gap only: never beats a configured rule
                    if gap_rank is None or rank > gap_rank:
                        gap, gap_rank = (compiled, verdict), rank
                    continue
                if best_rank is None or rank > best_rank:
                    best, best_rank = (compiled, verdict), rank
                if compiled.rule.source in FLOOR_SOURCES and (floor_rank is None or rank > floor_rank):
                    floor, floor_rank = (compiled, verdict), rank
        if best is not None and floor is not None and best[0].rule.source not in FLOOR_SOURCES:
            if STRICTNESS[floor[1]] > STRICTNESS[best[1]]:
                return floor  # the user file is a floor for the project file
        return best if best is not None else gap
