"""The one glob dialect: rules (``includes``, ``excludes``) and ``search_files`` all match with it.

The dialect (documented in docs/configuration.md, "Globs"):

* A pattern is matched against a path relative to a base (the rule's anchor, or the
  directory ``search_files`` searches), with ``/`` separators.
* ``{a,b}`` alternatives are expanded first (they may nest; at most
  ``MAX_ALTERNATIVES`` results). Each alternative then follows gitignore rules
  (pathspec's ``gitwildmatch``):

  - a pattern with a ``/`` at its start or in its middle is anchored at the base;
    one without (``*.pem``, ``.env``, ``secrets/``) matches a name at any depth;
  - ``*`` matches any characters but ``/``, ``?`` one character but ``/``,
    ``[abc]``/``[!abc]`` one character of (not of) a set; names starting with a dot
    are matched like any other;
  - ``**`` as a whole component matches any number of directories, zero included;
  - a trailing ``/`` matches directories only (so: what is inside them).

* A path is covered when an alternative matches it *or any directory above it*
  (gitignore: a matched directory takes everything in it). ``dir/**`` also covers
  ``dir`` itself.

A pattern the matcher cannot honour is an error (``GlobError``), never a silent
non-match: an empty pattern or alternative, leading or trailing whitespace, a
leading ``!`` (use ``excludes``), a backslash (no escapes), ``**`` glued to other
characters, unbalanced ``{``/``}`` or ``[``/``]``, ``.``/``..`` or empty components,
too many alternatives, an empty alternative (``{a,}``), braces holding a single
alternative (``{a}``). Bash-style ranges (``{1..3}``) expand like alternatives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAX_ALTERNATIVES = 256
_GLOB_CHARS = "*?[{"


class GlobError(ValueError):
    """A pattern the dialect cannot honour; the message says why."""


def _balanced(pattern: str) -> str | None:
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end < 0:
                return "an unclosed '[' (a character set needs its ']')"
            if "/" in pattern[i:end]:
                return "a character set cannot contain '/'"
            i = end + 1
            continue
        if char == "]":
            return "a ']' without its '['"
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return "a '}' without its '{'"
        i += 1
    return "an unclosed '{' (alternatives are written {a,b})" if depth else None


def _check_alternative(alt: str) -> None:
    if not alt:
        raise GlobError("an alternative is empty")
    body = alt[1:] if alt.startswith("/") else alt
    body = body[:-1] if body.endswith("/") else body
    if not body:
        raise GlobError("it names no file (only '/')")
    for part in body.split("/"):
        if part == "":
            raise GlobError("it has an empty component ('//')")
        if part in (".", ".."):
            raise GlobError(f"it has a {part!r} component; patterns are relative to the rule's path")
        if "**" in part and part != "**":
            raise GlobError("'**' must be a whole path component (a/**/b), not part of a name")


def expand(pattern: str) -> list[str]:
    """The pattern's alternatives after checking it; raises ``GlobError``."""
    if not isinstance(pattern, str) or not pattern:
        raise GlobError("the pattern is empty")
    if pattern != pattern.strip():
        raise GlobError("it starts or ends with whitespace")
    if pattern.startswith("!"):
        raise GlobError("negated globs are not supported; use `excludes`")
    if "\\" in pattern:
        raise GlobError("backslash escapes are not supported")
    problem = _balanced(pattern)
    if problem:
        raise GlobError(f"it has {problem}")
    if "{," in pattern or ",," in pattern or ",}" in pattern or "{}" in pattern:
        raise GlobError("an alternative in {...} is empty")
    if "{" not in pattern:  # no alternative to expand: bracex gives the pattern back (tests/test_globs.py)
        alternatives = [pattern]
    else:
        import bracex  # imported for the first pattern with braces

        try:
            alternatives = bracex.expand(pattern, limit=MAX_ALTERNATIVES)
        except Exception as exc:  # noqa: BLE001 - bracex's limit exception or a malformed expression
            raise GlobError(f"its alternatives cannot be expanded ({exc or type(exc).__name__}); at most "
                            f"{MAX_ALTERNATIVES} are allowed") from None
    if len(alternatives) > MAX_ALTERNATIVES:
        raise GlobError(f"it expands to more than {MAX_ALTERNATIVES} alternatives")
    seen: list[str] = []
    for alt in alternatives:
        if "{" in alt or "}" in alt:
            raise GlobError("braces must hold alternatives separated by ',' ({a,b})")
        _check_alternative(alt)
        if alt not in seen:
            seen.append(alt)
    return seen


def check_pattern(pattern: str) -> None:
    """Raise ``GlobError`` unless every alternative compiles to a matcher."""
    for alt in expand(pattern):
        _compile_alternative(alt)


def literal_prefix(alternative: str) -> int:
    """Length of an alternative before its first glob character (specificity)."""
    for i, char in enumerate(alternative.lstrip("/")):
        if char in _GLOB_CHARS:
            return i
    return len(alternative.lstrip("/"))


def _compile_alternative(alt: str) -> list[re.Pattern[str]]:
    regexes = []
    if alt.endswith("/"):  # a directory only: what is inside it (pathspec mishandles "*/" alone)
        body = alt[:-1]
        floating = not body.startswith("/") and "/" not in body
        alt = ("**/" if floating else "") + body + "/*"
    forms = [alt]
    head = alt
    while head.endswith("/**") and head != "/**":  # dir/** (and dir/**/**) covers dir itself
        head = head[: -len("/**")]
    if head != alt and head not in ("", "/", "**"):
        forms.append(head if head.startswith(("/", "**/")) or "/" in head else "/" + head)
    for form in forms:
        include, regex = _translate(form)
        if include is None or regex is None:
            raise GlobError("it matches nothing")
        if form == "**" or form == "/**":
            regexes.append(re.compile(r"."))
        else:
            regexes.append(regex)
    return regexes


def _wildmatch() -> Any:
    """pathspec's gitignore pattern class (imported with the first glob: a command without globs never loads it)."""
    try:  # pathspec >= 1.0 renamed the gitwildmatch pattern class
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
    except ImportError:  # pragma: no cover - pathspec 0.12
        from pathspec.patterns import GitWildMatchPattern as GitIgnoreSpecPattern
    return GitIgnoreSpecPattern


@lru_cache(maxsize=4096)
def _translate(form: str) -> tuple[bool | None, re.Pattern[str] | None]:
    """``(include, regex)`` as pathspec's pattern gives them for one form (memoized: a pure function of the text)."""
    pattern = _wildmatch()(form)
    return pattern.include, pattern.regex


@dataclass(frozen=True)
class Alternative:
    text: str
    literal: int
    regexes: tuple[re.Pattern[str], ...]

    def matches(self, rel: str) -> bool:
        return any(regex.match(rel) is not None for regex in self.regexes)


def compile_pattern(pattern: str) -> tuple[Alternative, ...]:
    """Compile one pattern (raises ``GlobError``), longest literal prefix first."""
    alts = [Alternative(a, literal_prefix(a), tuple(_compile_alternative(a))) for a in expand(pattern)]
    return tuple(sorted(alts, key=lambda a: -a.literal))


class GlobSet:
    """Several patterns; a path is covered when any of them covers it."""

    def __init__(self, patterns: tuple[str, ...] | list[str]):
        self.patterns = tuple(patterns)
        self.alternatives = tuple(
            sorted((a for p in self.patterns for a in compile_pattern(p)), key=lambda a: -a.literal)
        )

        # Every alternative's regexes in one flat list, in the alternatives' order: the first
        # regex that matches belongs to the first alternative that covers the path (decisions
        # try these once per path, so a flat loop over bound methods is what they cost).
        self._flat = tuple((regex.match, a.literal) for a in self.alternatives for regex in a.regexes)

    def __bool__(self) -> bool:
        return bool(self.alternatives)

    def matches(self, rel: str) -> bool:
        return self.best(rel) is not None

    def best(self, rel: str) -> int | None:
        """The longest literal prefix among the alternatives covering ``rel``, or None."""
        for match, literal in self._flat:  # sorted: the first match has the longest prefix
            if match(rel) is not None:
                return literal
        return None


def matches(pattern: str, rel: str) -> bool:
    """Whether ``pattern`` covers ``rel`` (raises ``GlobError`` for a bad pattern)."""
    return any(alt.matches(rel) for alt in compile_pattern(pattern))
