"""Which agents are present for a set of folders, and whether each one is guarded.

An agent is present when its configuration is in a folder (or the folder's repository
root): ``.claude/`` or ``CLAUDE.md`` (Claude Code), ``.codex/`` or ``AGENTS.md`` (Codex),
``.gemini/`` or ``GEMINI.md`` (Gemini CLI), ``.github/hooks/``,
``.github/copilot-instructions.md`` or ``.copilot/`` (Copilot CLI); or when its user-level
home exists (``~/.claude``, ``$CODEX_HOME``, ``~/.gemini``, ``~/.copilot``): then it is
installed for this user and can run in any folder.

Guarded means Root Guard's pre-tool hook is in a settings file the agent reads for these
folders and covers every tool (Claude: ``PreToolUse`` with matcher ``*``; Codex: a
``PreToolUse`` hook that Codex trusts (a ``[hooks.state]`` entry; Codex skips an untrusted
hook silently); Gemini: ``BeforeTool`` with matcher ``.*``; Copilot: a ``preToolUse`` hook
in ``~/.copilot/hooks/``). Anything else is a warning, ``agent-unguarded``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from lsp_bridge.agents import AGENTS
from lsp_bridge.agents.places import SettingsError, codex_home, home, load

LABELS = {"claude": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI", "copilot": "Copilot CLI"}
MARKERS = {
    "claude": (".claude", "CLAUDE.md", "CLAUDE.local.md", ".mcp.json"),
    "codex": (".codex", "AGENTS.md"),
    "gemini": (".gemini", "GEMINI.md"),
    "copilot": (".copilot", os.path.join(".github", "hooks"), os.path.join(".github", "copilot-instructions.md")),
}
ALL_TOOLS = ("*", "", ".*", None)


def ours(command: object, agent: str) -> bool:
    """Whether a hook command is Root Guard's hook for ``agent``."""
    import re  # here: `rootguard roots` imports this module and no regular expression otherwise

    return isinstance(command, str) and re.search(rf"(?:lsp_bridge\.cli|rootguard)['\"]?\s+hook\s+{agent}\b",
                                                  command) is not None


class AgentState:
    """One agent for a set of folders (no dataclass: `rootguard roots` imports this module, and
    ``dataclasses`` brings ``re`` and ``inspect``)."""

    def __init__(self, agent: str, present: bool, config_dirs: tuple[str, ...], guarded: bool,
                 hooks: tuple[str, ...] = (), note: str = "", problems: tuple[str, ...] = ()) -> None:
        self.agent = agent
        self.present = present
        self.config_dirs = config_dirs  # where it was found (project markers, the user-level home)
        self.guarded = guarded
        self.hooks = hooks  # the settings files holding Root Guard's hook
        self.note = note  # why it is not guarded, or what to know
        self.problems = problems

    def to_json(self) -> dict:
        return {"agent": self.agent, "label": LABELS[self.agent], "present": self.present,
                "config_dirs": list(self.config_dirs), "guarded": self.guarded, "hooks": list(self.hooks),
                "note": self.note}

    @property
    def warning(self) -> str | None:
        if not self.present or self.guarded:
            return None
        where = ", ".join(self.config_dirs)
        return (f"{LABELS[self.agent]} is present ({where}) but unguarded: {self.note or 'no Root Guard hook'}; "
                f"run `rootguard agents install {self.agent}`")


def unguarded_warnings(folders: Sequence[str], env: Mapping[str, str] | None = None) -> list[dict]:
    """``{"severity", "code": "agent-unguarded", "message"}`` for each agent present and unguarded."""
    try:
        states = agent_states(folders, env)
    except (OSError, ValueError):
        return []
    return [{"severity": "warning", "code": "agent-unguarded", "message": s.warning} for s in states if s.warning]


def agent_states(folders: Sequence[str], env: Mapping[str, str] | None = None) -> list[AgentState]:
    """Every known agent, present or not, for these folders."""
    env = os.environ if env is None else env
    return [agent_state(agent, folders, env) for agent in AGENTS]


def agent_state(agent: str, folders: Sequence[str], env: Mapping[str, str]) -> AgentState:
    found: list[str] = []
    for folder in _places(folders):
        for marker in MARKERS[agent]:
            path = os.path.join(folder, marker)
            if os.path.lexists(path) and path not in found:
                found.append(path)
    user_home = codex_home(env) if agent == "codex" else os.path.join(home(env), f".{agent}")
    if os.path.isdir(user_home):
        found.append(user_home)
    hooks, note, problems = _guard(agent, folders, env)
    return AgentState(agent, bool(found), tuple(found), bool(hooks) and not note, tuple(hooks), note, tuple(problems))


def _places(folders: Sequence[str]) -> list[str]:
    """The folders and each one's repository root (where an agent's project files usually sit)."""
    from lsp_bridge.core.worktrees import locate

    places: list[str] = []
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        places.append(folder)
        try:
            location = locate(folder).location
        except (OSError, ValueError):
            location = None
        top = location.toplevel if location is not None else None
        if isinstance(top, str) and top not in places:
            places.append(top)
    return places


def settings_with_hooks(agent: str, folders: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Every settings file where this agent reads hooks for these folders."""
    user = home(env)
    if agent == "claude":
        found = [os.path.join(user, ".claude", "settings.json")]
        for folder in _places(folders):
            found += [os.path.join(folder, ".claude", "settings.json"), os.path.join(folder, ".claude",
                                                                                     "settings.local.json")]
        return found
    if agent == "codex":
        return [os.path.join(codex_home(env), "config.toml")]
    if agent == "gemini":
        return [os.path.join(user, ".gemini", "settings.json")] + [
            os.path.join(f, ".gemini", "settings.json") for f in _places(folders)]
    directory = os.path.join(user, ".copilot", "hooks")
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError:
        names = []
    return [os.path.join(directory, n) for n in names]


def _guard(agent: str, folders: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], str, list[str]]:
    """(settings files holding our hook, why it does not guard yet, unreadable files)."""
    hooks: list[str] = []
    problems: list[str] = []
    note = ""
    for path in dict.fromkeys(settings_with_hooks(agent, folders, env)):
        try:
            data = load(path)
        except SettingsError as err:
            problems.append(str(err))
            continue
        if isinstance(data, dict) and has_hook(agent, data):
            hooks.append(path)
            if agent == "codex" and not codex_trusted(data, path):
                note = ("installed but not trusted yet: Codex skips an untrusted hook silently; start `codex`, "
                        "open /hooks and trust the Root Guard hook")
    if not hooks and problems:
        note = "its settings cannot be read: " + "; ".join(problems)
    return hooks, note, problems


def has_hook(agent: str, data: dict) -> bool:
    """Whether settings ``data`` hold Root Guard's pre-tool hook for ``agent``, covering every tool."""
    events = data.get("hooks")
    if not isinstance(events, dict):
        return False
    event = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool", "copilot": "preToolUse"}[agent]
    groups = events.get(event)
    if not isinstance(groups, list):
        return False
    for group in groups:
        if not isinstance(group, dict):
            continue
        if agent == "copilot":
            if ours(group.get("bash"), agent) or ours(group.get("command"), agent):
                return True
            continue
        if group.get("matcher") not in ALL_TOOLS:
            continue
        for handler in group.get("hooks") or []:
            if isinstance(handler, dict) and ours(handler.get("command"), agent):
                return True
    return False


def codex_trusted(data: dict, path: str) -> bool:
    """Whether Codex recorded its trust in a ``PreToolUse`` hook of this file (``[hooks.state."<file>:
    pre_tool_use:<group>:<handler>"] trusted_hash``). Root Guard does not check the hash itself."""
    state = data.get("hooks", {}).get("state") if isinstance(data.get("hooks"), dict) else None
    if not isinstance(state, dict):
        return False
    for key, value in state.items():
        if ":pre_tool_use:" in key and isinstance(value, dict) and value.get("trusted_hash") \
                and value.get("enabled", True) is not False:
            return True
    return False
