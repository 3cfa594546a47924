"""``rootguard agents install/uninstall``: Root Guard's hook in each agent's own settings file.

* Claude Code: ``~/.claude/settings.json`` (``--user``) or ``<folder>/.claude/settings.json``
  (``--project``): ``PreToolUse`` (matcher ``*``), ``PermissionRequest`` and ``DirectoryAdded``;
* Codex: ``$CODEX_HOME/config.toml`` (default ``~/.codex``), edited with tomlkit so comments
  and formatting stay: ``[[hooks.PreToolUse]]``. Codex runs a hook only once the person has
  trusted it (``/hooks`` in ``codex``, which records its hash); Root Guard does not approve
  its own hook and says so;
* Gemini CLI: ``~/.gemini/settings.json`` or ``<folder>/.gemini/settings.json``: ``BeforeTool``
  (matcher ``.*``);
* Copilot CLI: ``~/.copilot/hooks/rootguard.json`` (or ``<folder>/.github/hooks/rootguard.json``,
  which Copilot reads only in a trusted folder), a file of Root Guard's own.

The command is this installation's interpreter by absolute path (``shell.hook_command``).
Everything else in a file stays as it was (a JSON file keeps its indentation and key order;
one with comments is refused, with the block to add by hand). Installing twice changes
nothing. Before a file is changed its bytes are kept in Root Guard's state directory, with a
digest of what install wrote: uninstall restores those bytes exactly (or removes the file
install created) while the file is still as install left it; a file edited since keeps the
edits and loses only Root Guard's entries. Every change is printed as a unified diff first.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from lsp_bridge.agents.jsonedit import JsonEditError, add_hook_groups
from lsp_bridge.agents.places import codex_home, home, strip_json_comments
from lsp_bridge.agents.presence import has_hook, ours
from lsp_bridge.agents.shell import can_start, hook_command, interpreter_command

HOOK_TIMEOUT = 120  # seconds; the hook answers within its own deadline (hook.DEADLINE) anyway
SCOPES = ("user", "project")


class InstallError(Exception):
    """Cannot install or uninstall here: one line, exit 2."""


@dataclass
class Plan:
    agent: str
    path: str  # the settings file
    before: bytes | None  # None: the file does not exist
    after: bytes | None  # None: remove the file
    notes: list[str] = field(default_factory=list)
    restore: bool = False  # uninstall: the file goes back to the bytes kept at install

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        import difflib

        old = (self.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (self.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, self.path if self.before is not None else "/dev/null",
                                     self.path if self.after is not None else "/dev/null")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def settings_path(agent: str, scope: str, folder: str | None, env: Mapping[str, str]) -> str:
    if scope == "project":
        if agent == "codex":
            raise InstallError("Codex reads hooks from the user's $CODEX_HOME/config.toml: install it with --user")
        if not folder or not os.path.isdir(folder):
            raise InstallError(f"--project needs an existing folder (--folder DIR), not {folder!r}")
        relative = {"claude": (".claude", "settings.json"), "gemini": (".gemini", "settings.json"),
                    "copilot": (".github", "hooks", "rootguard.json")}[agent]
        return os.path.join(os.path.abspath(folder), *relative)
    user = home(env)
    return {"claude": os.path.join(user, ".claude", "settings.json"),
            "codex": os.path.join(codex_home(env), "config.toml"),
            "gemini": os.path.join(user, ".gemini", "settings.json"),
            "copilot": os.path.join(user, ".copilot", "hooks", "rootguard.json")}[agent]


def _read(path: str) -> bytes | None:
    from lsp_bridge.core.paths import read_regular

    if not os.path.lexists(path):
        return None
    data = read_regular(path, 16 << 20, follow=True)
    if data is None:
        raise InstallError(f"{path}: not a readable regular file")
    return data


# ---------------------------------------------------------------------------
# planning


def plan_install(agent: str, scope: str, folder: str | None, env: Mapping[str, str]) -> Plan:
    path = settings_path(agent, scope, folder, env)
    before = _read(path)
    command = hook_command(agent)
    problem = can_start(interpreter_command("hook", "--help"))
    if problem is not None:  # a hook that cannot start lets every call through: never write one
        raise InstallError(f"`{command}` cannot start from another directory ({problem}); install Root Guard "
                           "into this interpreter (pip install) and run install again")
    if agent == "copilot":
        after = (json.dumps(copilot_file(command), indent=2) + "\n").encode()
        return Plan(agent, path, before, before if before == after else after)
    if agent == "codex":
        return Plan(agent, path, before, _codex_install(path, before, command), notes=[CODEX_TRUST])
    data, indent, newline = _json_settings(path, before)
    if has_hook(agent, data) and _commands(data) >= {command}:
        return Plan(agent, path, before, before)
    text = before.decode("utf-8") if before is not None and before.strip() else "{}\n"
    if _remove_ours(agent, data):  # an older install (another interpreter): replaced, not doubled
        text = _dump_json(data, indent, newline).decode("utf-8")
    try:
        spliced = add_hook_groups(text, _json_groups(agent, command), indent)
    except JsonEditError as err:
        raise InstallError(f"{path}: {err}") from None
    return Plan(agent, path, before, spliced.encode("utf-8"))


def _json_groups(agent: str, command: str) -> list[tuple[str, dict]]:
    if agent == "claude":
        handler = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
        return [("PreToolUse", {"matcher": "*", "hooks": [handler]}),
                ("PermissionRequest", {"matcher": "*", "hooks": [dict(handler)]}),
                ("DirectoryAdded", {"hooks": [dict(handler)]})]
    handler = {"name": "rootguard", "type": "command", "command": command, "timeout": HOOK_TIMEOUT * 1000}
    return [("BeforeTool", {"matcher": ".*", "hooks": [handler]})]


def copilot_file(command: str) -> dict:
    return {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT}]}}


CODEX_TRUST = ("Codex runs a hook only after you trust it: start `codex`, open /hooks and trust the Root Guard "
               "hook (Codex records its hash under [hooks.state] in config.toml). Until then Codex skips it "
               "without a word and `rootguard agents status` reports Codex as unguarded. Root Guard does not "
               "approve its own hook: that review is the one step between writing a file and running a command. "
               "An administrator can install it as a managed hook (requirements.toml) instead, which Codex trusts.")


def plan_uninstall(agent: str, scope: str, folder: str | None, env: Mapping[str, str]) -> Plan:
    path = settings_path(agent, scope, folder, env)
    before = _read(path)
    kept = Backups().find(path)
    if kept is not None and before is not None and hashlib.sha256(before).hexdigest() == kept.get("installed"):
        original = kept.get("original")
        after = base64.b64decode(original) if isinstance(original, str) else None
        return Plan(agent, path, before, after, restore=True)
    if before is None:
        return Plan(agent, path, None, None)
    if agent == "copilot":
        data, _, _ = _json_settings(path, before)
        if has_hook(agent, data) and kept is None:
            return Plan(agent, path, before, None, notes=["Root Guard's own hook file: removed"])
        if has_hook(agent, data):
            return Plan(agent, path, before, None, notes=["the file changed since install; removed all the same"])
        return Plan(agent, path, before, before)
    if agent == "codex":
        after = _codex_uninstall(before)
    else:
        data, indent, newline = _json_settings(path, before)
        after = _dump_json(data, indent, newline) if _remove_ours(agent, data) else before
    notes = ["the file changed since install: only Root Guard's entries were removed"] if after != before else []
    return Plan(agent, path, before, after, notes=notes)


# ---------------------------------------------------------------------------
# JSON settings (Claude, Gemini, Copilot)


def _json_settings(path: str, before: bytes | None) -> tuple[dict, int | str, bool]:
    """(data, indentation, ends with a newline) of a JSON settings file ({} when it does not exist)."""
    if before is None or not before.strip():
        return {}, 2, True
    try:
        text = before.decode("utf-8")
    except UnicodeDecodeError:
        raise InstallError(f"{path}: not UTF-8 text") from None
    if strip_json_comments(text) != text:
        raise InstallError(f"{path} has comments, which rewriting would lose: add Root Guard's hook by hand "
                           "(`rootguard agents install --dry-run` on a copy without comments shows the block)")
    try:
        data = json.loads(text)
    except ValueError as err:
        raise InstallError(f"{path}: not valid JSON ({err}); fix it first") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path}: the top level is not an object")
    return data, _indent(text), text.endswith("\n")


def _indent(text: str) -> int | str:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def _dump_json(data: dict, indent: int | str, newline: bool) -> bytes:
    return (json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")).encode()


def _commands(data: dict) -> set[str]:
    found: set[str] = set()
    for groups in (data.get("hooks") or {}).values() if isinstance(data.get("hooks"), dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for handler in (group.get("hooks") or []) if isinstance(group, dict) else ():
                if isinstance(handler, dict) and isinstance(handler.get("command"), str):
                    found.add(handler["command"])
    return found


def _remove_ours(agent: str, data: dict) -> bool:
    """Remove Root Guard's handlers (and the groups and events they leave empty); True if any."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    removed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [h for h in handlers if not (isinstance(h, dict) and ours(h.get("command"), agent))]
            if len(kept) != len(handlers):
                removed = True
                if kept:
                    kept_groups.append({**group, "hooks": kept})
            else:
                kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        elif groups:
            del hooks[event]
    if removed and not hooks:
        del data["hooks"]
    return removed


# ---------------------------------------------------------------------------
# Codex (TOML, with tomlkit)


def _codex_document(before: bytes | None):
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse((before or b"").decode("utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as err:
        raise InstallError(f"config.toml is not valid TOML ({err}); fix it first") from None


def _codex_install(path: str, before: bytes | None, command: str) -> bytes | None:
    import tomlkit

    doc = _codex_document(before)
    plain = doc.unwrap()
    if has_hook("codex", plain) and _commands(plain) >= {command}:
        return before
    _codex_remove(doc)
    hooks = doc.get("hooks")
    if hooks is None:
        hooks = tomlkit.table(is_super_table=True)
        doc["hooks"] = hooks
    elif not isinstance(hooks, dict):
        raise InstallError(f"{path}: `hooks` is not a table")
    handler = tomlkit.table()
    handler["type"] = "command"
    handler["command"] = command
    handlers = tomlkit.aot()
    handlers.append(handler)
    group = tomlkit.table()
    group["hooks"] = handlers
    existing = hooks.get("PreToolUse")
    if existing is None:
        entries = tomlkit.aot()
        entries.append(group)
        hooks["PreToolUse"] = entries
    else:
        existing.append(group)
    text = tomlkit.dumps(doc)
    if before and not before.endswith(b"\n") and text.endswith("\n"):
        pass  # tomlkit ends the new table with a newline: fine either way
    return text.encode()


def _codex_uninstall(before: bytes) -> bytes:
    import tomlkit

    doc = _codex_document(before)
    if not _codex_remove(doc):
        return before
    return tomlkit.dumps(doc).encode()


def _codex_remove(doc) -> bool:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return False
    entries = hooks.get("PreToolUse")
    if entries is None:
        return False
    removed = False
    for index in range(len(entries) - 1, -1, -1):
        group = entries[index]
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if handlers is None:
            continue
        for h_index in range(len(handlers) - 1, -1, -1):
            if ours(handlers[h_index].get("command"), "codex"):
                del handlers[h_index]
                removed = True
        if removed and len(handlers) == 0:
            del entries[index]
    if removed and len(entries) == 0:
        del hooks["PreToolUse"]
    if removed and len(hooks) == 0:
        del doc["hooks"]
    return removed


# ---------------------------------------------------------------------------
# applying, with the bytes kept for uninstall


class Backups:
    """``<state dir>/agent-settings/<digest>.json``: a settings file's bytes before install."""

    def __init__(self) -> None:
        from lsp_bridge.core.places import state_dir

        self.directory = os.path.join(state_dir(), "agent-settings")

    def _file(self, path: str) -> str:
        return os.path.join(self.directory, hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32]
                            + ".json")

    def find(self, path: str) -> dict | None:
        from lsp_bridge.core.atomic import read_cache

        kept = read_cache(self._file(path))
        return kept if isinstance(kept, dict) and kept.get("path") == path else None

    def keep(self, path: str, before: bytes | None, after: bytes) -> str:
        from lsp_bridge.core.atomic import atomic_write

        record = self.find(path)
        original = record.get("original") if record else (base64.b64encode(before).decode() if before is not None
                                                          else None)
        entry = {"path": path, "original": original, "installed": hashlib.sha256(after).hexdigest()}
        target = self._file(path)
        atomic_write(target, json.dumps(entry), mode=0o600, dir_mode=0o700)
        return target

    def forget(self, path: str) -> None:
        try:
            os.unlink(self._file(path))
        except FileNotFoundError:
            pass


def apply(plan: Plan, *, installing: bool) -> str | None:
    """Write the plan; the backup's path when one was kept."""
    from lsp_bridge.core.atomic import atomic_write

    if not plan.changes:
        return None
    backups = Backups()
    kept = None
    mode = 0o600
    if plan.before is not None:
        try:
            mode = os.stat(plan.path).st_mode & 0o777
        except OSError:
            pass
    if installing:
        assert plan.after is not None
        kept = backups.keep(plan.path, plan.before, plan.after)
    if plan.after is None:
        os.unlink(plan.path)
    else:
        os.makedirs(os.path.dirname(plan.path), mode=0o700, exist_ok=True)
        atomic_write(plan.path, plan.after.decode("utf-8"), mode=mode if plan.before is not None else 0o600)
    if not installing:
        backups.forget(plan.path)
    return kept
