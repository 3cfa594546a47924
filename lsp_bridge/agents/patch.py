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

from lsp_bridge.agents.model import Access, HookInputError, UndecidableCall, accesses, expand

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


# ---------------------------------------------------------------------------
# a patch sent through the shell: ``[cd DIR && ...] apply_patch <<'EOF' ... EOF``

_PATCH_COMMANDS = ("apply_patch", "applypatch")
_HEREDOC = re.compile(r"^(?P<prefix>.*?)(?<![\w./-])(?:apply_patch|applypatch)[ \t]*<<(?P<dash>-?)[ \t]*"
                      r"(?P<quote>['\"]?)(?P<tag>[A-Za-z_][A-Za-z0-9_]*)(?P=quote)[ \t]*$")
_SHELLS = ("bash", "sh", "zsh")
_UNSAFE_IN_DIR = set("&;|<>()$`\\*?[]{}~!#\n")


def shell_patch_accesses(command: str | list[str], cwd: str, env: Mapping[str, str]) -> list[Access]:
    """The files a shell command's patch touches. Codex applies ``apply_patch <<'EOF'`` itself, in the
    directory the ``cd DIR &&`` prefixes name, so that is where the headers are read; a command that
    mentions apply_patch in any other shape is refused (what it would patch, and where, is not certain)."""
    if isinstance(command, list):
        name = command[0].rsplit("/", 1)[-1] if command else ""
        if name in _PATCH_COMMANDS and len(command) == 2:
            return _headers(command[1], [cwd], env)
        if name in _SHELLS and len(command) == 3 and command[1] in ("-c", "-lc"):
            return shell_patch_accesses(command[2], cwd, env)
        text = "\n".join(command)
    else:
        text = command
    carries = looks_like_patch(text) or MARKER in text or "<<" in text
    if not any(name in text for name in _PATCH_COMMANDS) or not carries:
        # no patch Codex would apply itself: the shell runs it confined; visible headers are decided anyway
        return patch_accesses(text, cwd, env) if looks_like_patch(text) else []
    if isinstance(command, list):
        raise _unreadable("an argv command that is not [\"apply_patch\", PATCH] or [\"bash\", \"-lc\", SCRIPT]")
    return _heredoc_patch(text, cwd, env)


def _heredoc_patch(text: str, cwd: str, env: Mapping[str, str]) -> list[Access]:
    lines = text.replace("\r\n", "\n").split("\n")
    match = _HEREDOC.match(lines[0])
    if match is None:
        raise _unreadable("the first line is not `[cd DIR && ...] apply_patch <<'EOF'`")
    bases = _cd_prefix(match.group("prefix"), cwd)
    tag = match.group("tag")
    body: list[str] = []
    for index, line in enumerate(lines[1:], start=1):
        if (line.lstrip("\t") if match.group("dash") else line) == tag:
            if any(rest.strip() for rest in lines[index + 1:]):
                raise _unreadable(f"more commands follow the `{tag}` that ends the patch")
            return _headers("\n".join(body), bases, env)
        body.append(line)
    raise _unreadable(f"the heredoc has no line `{tag}` ending it")


def _cd_prefix(prefix: str, cwd: str) -> list[str]:
    """The directories (``cd`` read lexically as bash does, and as written as Codex joins it) that
    ``cd A && cd B && `` leads to from ``cwd``."""
    import os
    import shlex

    try:
        words = shlex.split(prefix)
    except ValueError:
        raise _unreadable("the words before apply_patch do not parse") from None
    if len(words) % 3:
        raise _unreadable("only `cd DIR &&` may come before apply_patch")
    bases = [cwd]
    for index in range(0, len(words), 3):
        cd, directory, joiner = words[index:index + 3]
        if cd != "cd" or joiner != "&&" or not directory or directory.startswith("-") \
                or _UNSAFE_IN_DIR & set(directory):
            raise _unreadable(f"`{' '.join(words[index:index + 3])}` is not a plain `cd DIR &&`")
        bases = [os.path.join(b, directory) for b in bases]
    return list(dict.fromkeys([*bases, *(os.path.normpath(b) for b in bases)]))


def _headers(patch: str, bases: list[str], env: Mapping[str, str]) -> list[Access]:
    found = [access for base in bases for access in patch_accesses(patch, base, env)]
    if not found:
        raise _unreadable("the patch names no file (no *** Add/Update/Delete File header)")
    return found


def _unreadable(why: str) -> UndecidableCall:
    return UndecidableCall(f"a shell command carrying apply_patch, in a shape the hook cannot read with certainty "
                           f"({why}); send the patch as apply_patch <<'EOF' ... EOF, after `cd DIR &&` at most")
