"""Where each agent keeps its settings, and the extra directories they give it.

The agents' own extra directories are roots too, and widenings:

* Claude Code: ``permissions.additionalDirectories`` in ``~/.claude/settings.json``,
  ``<project>/.claude/settings.json`` and ``<project>/.claude/settings.local.json``;
* Codex: ``sandbox_workspace_write.writable_roots`` in ``$CODEX_HOME/config.toml`` and
  ``<project>/.codex/config.toml``;
* Gemini CLI: ``context.includeDirectories`` in ``~/.gemini/settings.json`` and
  ``<project>/.gemini/settings.json`` (JSON with comments);
* Copilot CLI keeps none in a file (``--add-dir`` is a flag, which no hook sees).

A settings file that cannot be read or parsed is an error (``SettingsError``): the hook
then blocks, since it cannot know which directories the agent was given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MAX_SETTINGS_BYTES = 4 << 20


class SettingsError(ValueError):
    """An agent's settings file that exists but cannot be read or parsed; names the file."""


class ExtraDir:
    """A directory an agent's settings add to its scope (no dataclass: `rootguard roots` imports this
    module, and ``dataclasses`` brings ``re`` and ``inspect``)."""

    __slots__ = ("path", "source")

    def __init__(self, path: str, source: str) -> None:
        self.path = path  # absolute, normalised
        self.source = source  # the settings file (and key) that gave it

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExtraDir) and (self.path, self.source) == (other.path, other.source)

    def __hash__(self) -> int:
        return hash((self.path, self.source))

    def __repr__(self) -> str:
        return f"ExtraDir({self.path!r}, {self.source!r})"


def home(env: Mapping[str, str]) -> str:
    value = env.get("HOME") or os.path.expanduser("~")
    return value if os.path.isabs(value) else os.path.expanduser("~")


def codex_home(env: Mapping[str, str]) -> str:
    value = env.get("CODEX_HOME", "")
    return value if os.path.isabs(value) else os.path.join(home(env), ".codex")


def settings_files(agent: str, project: str | None, env: Mapping[str, str]) -> list[str]:
    """The settings files an agent reads (user first, then the project's), existing or not."""
    user = home(env)
    if agent == "claude":
        found = [os.path.join(user, ".claude", "settings.json")]
        if project:
            found += [os.path.join(project, ".claude", "settings.json"),
                      os.path.join(project, ".claude", "settings.local.json")]
        return found
    if agent == "codex":
        found = [os.path.join(codex_home(env), "config.toml")]
        return found + ([os.path.join(project, ".codex", "config.toml")] if project else [])
    if agent == "gemini":
        found = [os.path.join(user, ".gemini", "settings.json")]
        return found + ([os.path.join(project, ".gemini", "settings.json")] if project else [])
    return []


def read_text(path: str) -> str | None:
    """The file's text, None when it does not exist; ``SettingsError`` when it cannot be read."""
    from lsp_bridge.core.paths import read_regular

    if not os.path.lexists(path):
        return None
    data = read_regular(path, MAX_SETTINGS_BYTES + 1, follow=True)
    if data is None:
        raise SettingsError(f"{path}: not a readable regular file")
    if len(data) > MAX_SETTINGS_BYTES:
        raise SettingsError(f"{path}: larger than {MAX_SETTINGS_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: not UTF-8 text") from None


def load(path: str) -> Any:
    """The parsed settings file (JSON, JSON with comments, or TOML), None when it does not exist."""
    text = read_text(path)
    if text is None:
        return None
    if path.endswith(".toml"):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise SettingsError(f"{path}: not valid TOML ({err})") from None
    import json  # here: `rootguard roots` imports this module, and reads no JSON when no agent is set up

    try:
        return json.loads(strip_json_comments(text) if text.strip() else "{}")
    except ValueError as err:
        raise SettingsError(f"{path}: not valid JSON ({err})") from None


def extra_dirs(agent: str, project: str | None, env: Mapping[str, str]) -> list[ExtraDir]:
    """The directories the agent's settings add to its scope (absolute; relative ones from the project)."""
    found: list[ExtraDir] = []
    for path in settings_files(agent, project, env):
        data = load(path)
        if data is None:
            continue
        if not isinstance(data, dict):
            raise SettingsError(f"{path}: the top level is not an object")
        key, values = _extra_values(agent, data)
        if values is None:
            continue
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SettingsError(f"{path}: {key} must be a list of paths")
        base = project or os.path.dirname(os.path.dirname(path))
        for value in values:
            if not value or "\x00" in value:
                raise SettingsError(f"{path}: {key} holds an empty path")
            expanded = home(env) + value[1:] if value == "~" or value.startswith("~/") else value
            absolute = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(base, expanded))
            found.append(ExtraDir(absolute, f"{path} {key}"))
    return found


def _extra_values(agent: str, data: dict[str, Any]) -> tuple[str, Any]:
    if agent == "claude":
        permissions = data.get("permissions")
        return "permissions.additionalDirectories", (
            permissions.get("additionalDirectories") if isinstance(permissions, dict) else None)
    if agent == "codex":
        table = data.get("sandbox_workspace_write")
        return "sandbox_workspace_write.writable_roots", table.get("writable_roots") if isinstance(table, dict) else None
    if agent == "gemini":
        context = data.get("context")
        return "context.includeDirectories", context.get("includeDirectories") if isinstance(context, dict) else None
    return "", None


def strip_json_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments (Gemini's settings) as plain JSON; strings kept."""
    out: list[str] = []
    index, length = 0, len(text)
    in_string = False
    while index < length:
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\" and index + 1 < length:
                out.append(text[index + 1])
                index += 2
                continue
            if char == '"':
                in_string = False
            index += 1
            continue
        if char == '"':
            in_string = True
            out.append(char)
            index += 1
        elif text.startswith("//", index):
            end = text.find("\n", index)
            index = length if end < 0 else end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = length if end < 0 else end + 2
        else:
            out.append(char)
            index += 1
    return "".join(out)
