"""pathspec's translation of a glob, kept between runs so a process need not import pathspec.

``core/globs.py`` hands each form of an alternative to pathspec's gitwildmatch
pattern class, which turns it into a regular expression. Importing pathspec costs
26-40 ms (it imports ``typing_extensions``, ``dataclasses``, ``inspect``,
``pathlib``, ``urllib.parse``, ``ipaddress`` and probes its optional backends):
more than the rest of a ``rootguard check`` whose configuration has one glob. The
translation is a pure function of the form's text and of pathspec's code, so this
module keeps its answer, the expression's text and flags and the pattern's
``include``, per form, in ``glob-regex.json`` in the user's cache directory.

Validation, so that a kept translation is never different from pathspec's:

* the file is tied to the interpreter (``sys.version``) and to pathspec's own
  translating sources by their size, modification time and inode (``_version.py``,
  ``pattern.py``, ``util.py`` and ``patterns/gitignore/*.py``, found without
  importing pathspec): another interpreter, or another pathspec, starts over;
* an entry is looked up by the form's exact text and read back only if it has the
  shape this module writes; an entry is written only from pathspec's own answer in
  this process;
* where pathspec's sources cannot be found (another layout), nothing is kept.

The file is trusted as the user configuration file is: both are the user's own,
both are protected targets (a write to either needs approval: ``core/protected.py``)
and ``rootguard run`` binds both read-only. A pattern the kept text gives is
compiled through the regex cache (``core/regex_cache.py``), which rebuilds exactly
what ``re.compile`` makes.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import re
    from typing import Any

FILE_NAME = "glob-regex.json"
_FORMAT = 1
_SOURCES = ("_version.py", "pattern.py", "util.py", "patterns/gitignore/__init__.py",
            "patterns/gitignore/base.py", "patterns/gitignore/basic.py", "patterns/gitignore/spec.py")


def pathspec_signature() -> list[Any] | None:
    """What ties a kept translation to this interpreter and this pathspec; None: cannot be told."""
    from importlib.machinery import PathFinder  # already loaded by the interpreter: no import cost

    try:
        spec = PathFinder.find_spec("pathspec")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        if len(locations) != 1:
            return None
        marks: list[Any] = [_FORMAT, sys.version]
        for name in _SOURCES:
            info = os.stat(os.path.join(locations[0], name))
            marks.append([name, info.st_size, info.st_mtime_ns, info.st_ino])
        return marks
    except (OSError, ImportError, ValueError):
        return None


class Translations:
    """``translate(form)``: ``(include, regex)`` as pathspec's gitwildmatch pattern gives them."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.signature = pathspec_signature() if path is not None else None
        self._entries: dict[str, list[Any]] = {}
        self._changed = False
        if self.signature is None or path is None:
            return
        from lsp_bridge.core.atomic import read_cache  # json: a session with no glob never gets here

        data = read_cache(path)  # None: none yet, or not ours: every form is translated by pathspec, then written
        if isinstance(data, dict) and data.get("signature") == self.signature and isinstance(data.get("forms"), dict):
            self._entries = data["forms"]

    def translate(self, form: str) -> tuple[bool | None, re.Pattern[str] | None]:
        import re  # loaded by the first glob: a command without globs never imports it

        entry = self._entries.get(form)
        if _well_formed(entry):
            assert entry is not None
            include, text, flags = entry
            try:
                return include, _compile(text, flags)
            except (re.error, ValueError, TypeError, OverflowError, RecursionError):
                self._entries.pop(form, None)  # damaged: translated afresh below, and rewritten
        pattern = wildmatch()(form)
        include, regex = pattern.include, pattern.regex
        if self.signature is not None and isinstance(include, bool) and isinstance(regex, re.Pattern):
            self._entries[form] = [include, regex.pattern, regex.flags]
            self._changed = True
        return include, regex

    def save(self) -> None:
        """Write the file if a form was added (quietly nothing when it cannot be written)."""
        if self._changed and self.path is not None:
            import json

            from lsp_bridge.core.atomic import write_cache

            self._changed = False
            forms = dict(self._entries)  # one C-level copy: another thread may be adding an entry
            write_cache(self.path, json.dumps({"signature": self.signature, "forms": forms}))
        from lsp_bridge.core.regex_cache import regex_cache

        regex_cache().save()


def _well_formed(entry: object) -> bool:
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], bool)
            and isinstance(entry[1], str) and type(entry[2]) is int)


def _compile(text: str, flags: int) -> re.Pattern[str]:
    from lsp_bridge.core.regex_cache import regex_cache

    return regex_cache().compile(text, flags)


def wildmatch() -> Any:
    """pathspec's gitwildmatch pattern class, imported on first use."""
    try:  # pathspec >= 1.0 renamed the gitwildmatch pattern class
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
    except ImportError:  # pragma: no cover - pathspec 0.12
        from pathspec.patterns import GitWildMatchPattern as GitIgnoreSpecPattern
    return GitIgnoreSpecPattern


_shared: Translations | None = None


def translations() -> Translations:
    """The process's kept translations (``glob-regex.json`` in the user's cache directory), read once."""
    global _shared
    if _shared is None:
        from lsp_bridge.core.userdirs import user_cache_dir

        try:
            _shared = Translations(os.path.join(user_cache_dir(), FILE_NAME))
        except (ImportError, OSError):  # pragma: no cover - no cache directory: pathspec every time
            _shared = Translations(None)
    return _shared
