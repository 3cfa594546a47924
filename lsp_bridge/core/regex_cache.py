"""Regular expressions compiled once per interpreter and kept in the user's cache directory.

``re.compile`` parses and compiles a pattern in Python: ~0.2 ms for one of
detect-secrets' patterns, ~10 ms for all that an inventory uses, which a
language server pays the first time a folder widens. The compiled form is a list
of integers that ``_sre.compile`` turns into the very same ``re.Pattern`` in a
few microseconds. This module keeps that list per pattern, between runs.

Validation, so that a cached pattern is never different from ``re.compile``'s:
a file is used only by the same interpreter (``sys.version`` and the regex engine's
``MAGIC``) that wrote it, an entry is looked up by its exact text and flags, and
an entry is written only after the pattern rebuilt from it compared equal to
``re.compile``'s (same flags, same code, same groups). Anything else (no file, a
damaged one, an interpreter whose internals differ, code the engine refuses) falls
back to ``re.compile``.

What this guards against is staleness and damage, not a person or program that
writes the file on purpose: code the engine accepts is used as it is (rewriting an
entry's code changes what the detector finds, or what a rule's glob matches: the
kept glob translations of ``core/glob_cache.py`` compile here too). That is the trust
of every file in the user's cache directory (the detect-secrets pattern texts, the
git history answers, the kept scans): it is a protected target (a write to it needs
approval, ``core/protected.py``), and ``rootguard run`` binds it read-only.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # the regex engine (imported by re): no stubs
import json
import os
import re
import sys
from typing import TYPE_CHECKING

from lsp_bridge.core.atomic import read_cache, write_cache

if TYPE_CHECKING:
    from typing import Any

_FORMAT = 1  # the code as base64 of native 32-bit words: a JSON list of integers reads 2x slower


def _signature() -> list[object]:
    return [_FORMAT, sys.version, _sre.MAGIC]


class RegexCache:
    """``compile(text, flags)`` as ``re.compile``, from the cache file when it has the pattern."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._entries: dict[str, list[Any]] = {}
        self._changed = False
        if path is None:
            return
        data = read_cache(path)  # None: no cache yet, or not ours: everything is compiled, then written
        if isinstance(data, dict) and data.get("signature") == _signature() and isinstance(data.get("patterns"), dict):
            self._entries = data["patterns"]

    def compile(self, text: str, flags: int = 0) -> re.Pattern[str]:
        key = f"{flags}:{text}"
        entry = self._entries.get(key)
        if entry is not None:
            try:
                return _from_code(text, entry)
            except Exception:  # a damaged entry: compiled afresh, and rewritten
                del self._entries[key]
        pattern = re.compile(text, flags)
        entry = _code_entry(text, flags, pattern)
        if entry is not None:
            self._entries[key] = entry
            self._changed = True
        return pattern

    def save(self) -> None:
        """Write the file if a pattern was added (quietly nothing when it cannot be written)."""
        if self._changed and self.path is not None:
            self._changed = False
            patterns = dict(self._entries)  # one C-level copy: another thread may be adding an entry
            write_cache(self.path, json.dumps({"signature": _signature(), "patterns": patterns}))


def _from_code(text: str, entry: list[Any]) -> re.Pattern[str]:
    from array import array
    from binascii import a2b_base64

    flags, code, groups, groupindex, indexgroup = entry
    words = array("I", a2b_base64(code)).tolist()
    return _sre.compile(text, flags, words, groups, groupindex, tuple(indexgroup))  # type: ignore[no-any-return]


def _code_entry(text: str, flags: int, pattern: re.Pattern[str]) -> list[Any] | None:
    """What ``_sre.compile`` needs to rebuild ``pattern`` (as ``re._compiler.compile`` calls it),
    or None when this interpreter's internals do not give the same pattern back."""
    try:
        from array import array
        from binascii import b2a_base64
        from re import _compiler, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(text, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        code = array("I", _compiler._code(parsed, flags)).tobytes()
        entry = [flags | parsed.state.flags, b2a_base64(code, newline=False).decode("ascii"),
                 parsed.state.groups - 1, groupindex, indexgroup]
        # through JSON and back, as the next process will read it
        rebuilt = _from_code(text, json.loads(json.dumps(entry)))
    except Exception:
        return None
    same = (rebuilt == pattern and rebuilt.groups == pattern.groups
            and dict(rebuilt.groupindex) == dict(pattern.groupindex))
    return entry if same else None


_shared: RegexCache | None = None


def regex_cache() -> RegexCache:
    """The process's regex cache: ``regex-code.json`` in the user's cache directory, read once."""
    global _shared
    if _shared is None:
        from lsp_bridge.core.userdirs import user_cache_dir

        try:
            _shared = RegexCache(os.path.join(user_cache_dir(), "regex-code.json"))
        except (ImportError, OSError):  # pragma: no cover - no cache directory: compile every time
            _shared = RegexCache(None)
    return _shared
