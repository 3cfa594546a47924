"""The one glob dialect of rules and excludes: gitignore-style, through pathspec's public API.

``pathspec`` is imported on first use, so a configuration without globs (and
the language server's start-up) does not pay for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


def compile_globs(patterns: Sequence[str]) -> GitIgnoreSpec:
    """A matcher for ``patterns``; the last pattern that matches a path decides."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(patterns)


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be honoured, or None when it is a valid glob."""
    if pattern.startswith("!"):
        return "negated globs are not supported; use `excludes`"
    try:
        spec = compile_globs([pattern])
    except Exception as exc:  # noqa: BLE001 - pathspec raises ValueError or re.error
        return str(exc) or type(exc).__name__
    if not spec.patterns or all(p.include is None for p in spec.patterns):
        return "it matches nothing"
    return None
