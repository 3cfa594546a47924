"""The files a Codex ``apply_patch`` touches, read from the raw patch text.

Every header counts, wherever it sits and however it is indented (a model may indent
the patch inside a heredoc; Codex itself trims): ``*** Add File: P`` writes P,
``*** Update File: P`` reads and writes P, ``*** Delete File: P`` deletes P, and a
``*** Move to: Q`` after an update renames P to Q. A header with no path, or a move
with no update before it, is an error: the call is refused, never half-decided.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lsp_bridge.agents.model import Access, HookInputError, accesses, expand

_HEADER = re.compile(r"^[ \t]*\*\*\*[ \t]*(Add File|Update File|Delete File|Move to)[ \t]*:(.*)$")
MARKER = "*** Begin Patch"


def looks_like_patch(text: str) -> bool:
    """Whether a shell command carries a patch (older Codex sends ``apply_patch <<EOF`` through its shell)."""
    return "***" in text and any(_HEADER.match(line) for line in text.replace("\r\n", "\n").split("\n"))


def patch_accesses(text: str, cwd: str, env: Mapping[str, str]) -> list[Access]:
    found: list[Access] = []
    updating: str | None = None  # the path of the last Update File, which a Move to renames
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        match = _HEADER.match(line)
        if match is None:
            continue
        kind, path = match.group(1), match.group(2).strip()
        if not path:
            raise HookInputError(f"apply_patch line {number}: `*** {kind}:` names no file")
        if kind == "Add File":
            found += accesses("write", [path], cwd, env)
            updating = None
        elif kind == "Delete File":
            found += accesses("delete", [path], cwd, env)
            updating = None
        elif kind == "Update File":
            found += accesses(("read", "write"), [path], cwd, env)
            updating = path
        else:  # Move to
            if updating is None:
                raise HookInputError(f"apply_patch line {number}: `*** Move to:` without an `*** Update File:` before it")
            for source in expand(updating, cwd, env):
                for dest in expand(path, cwd, env):
                    found.append(Access("rename", source, dest))
            updating = None
    return found
