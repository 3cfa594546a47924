"""``[[paths]]`` rules compiled for matching: anchors, globs and specificity.

Specificity orders matching rules (seed 001): an exact file rule outranks a
directory rule; then the deepest anchor; then the longest literal prefix of
the include that matched. Globs are gitignore-style patterns (``globs.py``),
matched against the path relative to the anchor; an exclusion removes a path
from its rule even when an include matches it.

Compilation is pure: it reads the configuration and the scope, never the disk
(whether an anchor is a file was resolved when the configuration was loaded).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from lsp_bridge.core.globs import compile_globs
from lsp_bridge.core.paths import PrefixIndex, depth, fold, is_within, relative_to
from lsp_bridge.core.scope import Scope
from lsp_bridge.core.settings import STRICTNESS, Config, PathRule, Verdict

Specificity = tuple[int, int, int]


def literal_prefix(pattern: str) -> int:
    """Length of the part of an include before its first glob character."""
    for i, ch in enumerate(pattern):
        if ch in "*?[\\!":
            return i
    return len(pattern)


@dataclass(frozen=True)
class CompiledRule:
    rule: PathRule
    anchor: str  # folded canonical anchor (possibly remapped onto a worktree)
    exact: bool
    excludes: Any  # a pathspec matcher, or None
    includes: tuple[tuple[Any, int], ...]  # (matcher, literal prefix length), longest prefix first
    reduced: bool  # a project allow outside the host baseline: allow becomes request
    anchor_depth: int

    def specificity(self, rel: str) -> Specificity | None:
        """None when the rule does not match ``rel`` (the path below the anchor)."""
        if self.exact:
            return (1, self.anchor_depth, 0) if rel == "" else None
        if rel and self.excludes is not None and self.excludes.match_file(rel):
            return None
        if not self.includes:
            return (0, self.anchor_depth, 0)
        if not rel:
            return None
        for patterns, length in self.includes:
            if patterns.match_file(rel):
                return (0, self.anchor_depth, length)
        return None

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
        for rule in config.paths:
            exact = rule.is_file and not rule.includes
            excludes = compile_globs(rule.excludes) if rule.excludes else None
            includes = tuple(
                sorted(((compile_globs([p]), literal_prefix(p)) for p in rule.includes), key=lambda item: -item[1])
            )
            for anchor in self._anchors(rule, scope):
                reduced = rule.source == "project" and not scope.union.contains(anchor)
                compiled = CompiledRule(rule, anchor, exact, excludes, includes, reduced, depth(anchor))
                by_anchor.setdefault(anchor, []).append(compiled)
        self._index: PrefixIndex[list[CompiledRule]] = PrefixIndex(by_anchor)

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

    def winner(self, key: str, need: str) -> tuple[CompiledRule, Verdict] | None:
        """The most specific rule deciding ``need`` for folded path ``key``."""
        if not self._index:
            return None
        best = None
        best_rank = None
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
                if best_rank is None or rank > best_rank:
                    best, best_rank = (compiled, verdict), rank
        return best
