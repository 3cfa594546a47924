"""Protected targets: paths whose mutation is always at least ``request``.

Built into the engine (PRODUCT.md "Decision semantics"), not a default rule a
project file could override. Writing, creating, renaming onto or from, or deleting:

* every *candidate* configuration file, loaded or not: a file named
  ``.rootguard.toml`` anywhere, the user configuration directory (and the file
  ``ROOTGUARD_CONFIG`` names);
* anything named ``.git`` and everything below a ``.git`` directory (hooks,
  ``config``: git runs them by itself);
* files editors and shells run by themselves: ``.vscode/settings.json``,
  ``.vscode/tasks.json``, ``.vscode/launch.json``, ``.envrc``, ``.devcontainer/**``,
  ``.husky/**``;
* Root Guard's own state (the audit log's directory) and its cache directory (the kept
  scans, git history answers and compiled patterns the inventory trusts: a forged kept
  scan would hide a credential file from the next widening report), and its runtime
  directory, where editor windows publish their folders for the agents' hooks;
* every agent's own configuration and hook files, existing or not: ``.claude/settings*.json``,
  ``.claude/hooks/**`` (and the ``.claude`` directory entry, so it cannot be swapped),
  ``.mcp.json``, ``.codex/**``, ``.gemini/**``, ``.copilot/**``, ``.cursor/**``,
  ``.github/hooks/**``, ``.vscode/mcp.json``, and the user-level homes ``~/.claude``,
  ``~/.codex`` (``$CODEX_HOME``), ``~/.gemini``, ``~/.copilot`` as a whole;
* agent instruction files (``AGENTS.md``, ``CLAUDE.md``, ``CLAUDE.local.md``, ``GEMINI.md``,
  ``.github/copilot-instructions.md``): agents load them into the next session's prompt.

Only the user file can relax one, and only for a named path: an exact-file user
rule on that very path (a persistent "always" grant is one).

``protected_reason`` is pure: it compares path components.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lsp_bridge.core.paths import fold, is_within
from lsp_bridge.core.places import state_dir
from lsp_bridge.core.settings import PROJECT_FILE_NAME

_AUTORUN_FILES = {(".vscode", "settings.json"), (".vscode", "tasks.json"), (".vscode", "launch.json"),
                  (".vscode", "mcp.json")}
_AUTORUN_NAMES = {".envrc"}
_AUTORUN_DIRS = {".devcontainer", ".husky"}
AGENT_DIRS = (".codex", ".gemini", ".copilot", ".cursor")  # everything below is an agent's configuration
AGENT_FILES = (".mcp.json",)  # an agent's configuration wherever it sits
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md")
AGENT_HOMES = (".claude", ".codex", ".gemini", ".copilot")  # below the home folder: protected as a whole
_GITHUB_AGENT_ENTRIES = ("hooks", "copilot-instructions.md")  # below a .github directory (``_agent_reason``)

# The names a walk looking for protected targets stops at (``sandbox/profile.py``), derived from the
# lists above so that the two cannot drift apart: a name anywhere, a name below ``.vscode``, a name
# below ``.github``. ``protected_reason`` still confirms each candidate.
PROTECTED_NAMES = frozenset({".git", PROJECT_FILE_NAME, *_AUTORUN_NAMES, *_AUTORUN_DIRS, ".claude", *AGENT_DIRS,
                             *AGENT_FILES, *INSTRUCTION_FILES})
PROTECTED_VSCODE = frozenset(name for directory, name in _AUTORUN_FILES if directory == ".vscode")
PROTECTED_GITHUB = frozenset(_GITHUB_AGENT_ENTRIES)


@dataclass(frozen=True)
class ProtectedAreas:
    """The machine-specific protected places (folded canonical paths)."""

    user_config_dir: str | None = None
    user_file: str | None = None
    state_dir: str | None = None
    admin_dirs: tuple[str, ...] = ()
    cache_dir: str | None = None
    runtime_dir: str | None = None
    agent_homes: tuple[str, ...] = ()


def default_areas(user_file: str | None) -> ProtectedAreas:
    """The user configuration directory, ``ROOTGUARD_CONFIG``'s file, the state and the cache directory."""
    import platformdirs

    config_dir = os.path.realpath(platformdirs.user_config_dir("rootguard"))
    state = os.path.realpath(state_dir())
    cache_dir = os.path.realpath(platformdirs.user_cache_dir("rootguard"))
    return ProtectedAreas(fold(config_dir), fold(user_file) if user_file else None, fold(state),
                          cache_dir=fold(cache_dir), runtime_dir=fold(os.path.realpath(runtime_dir())),
                          agent_homes=agent_homes())


def runtime_dir() -> str:
    """``platformdirs.user_runtime_dir("rootguard")``."""
    import warnings

    import platformdirs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "XDG_RUNTIME_DIR is not set, falling back to ..."
        return platformdirs.user_runtime_dir("rootguard")


def agent_homes() -> tuple[str, ...]:
    """The agents' user-level homes (``~/.claude``, ``$CODEX_HOME`` or ``~/.codex``...), folded, canonical."""
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return ()
    found = [os.path.join(home, name) for name in AGENT_HOMES]
    codex_home = os.environ.get("CODEX_HOME", "")
    if os.path.isabs(codex_home):
        found.append(codex_home)
    return tuple(dict.fromkeys(fold(os.path.realpath(p)) for p in found))


def protected_reason(path: str, areas: ProtectedAreas) -> str | None:
    """Why mutating canonical ``path`` needs approval, or None."""
    key = fold(path)
    parts = [p for p in key.split(os.sep) if p]
    names = [fold(n) for n in (".git", PROJECT_FILE_NAME)]
    if names[0] in parts:
        return "anything named .git and everything below a .git directory is protected (git runs hooks and config)"
    if names[1] in parts:  # the file, or a directory of that name (which would break loading)
        return f"{PROJECT_FILE_NAME} is a candidate Root Guard configuration file"
    if areas.user_file and key == areas.user_file:
        return "it is the Root Guard user configuration file"
    if areas.user_config_dir and is_within(key, areas.user_config_dir):
        return "it is in the Root Guard user configuration directory"
    if areas.state_dir and is_within(key, areas.state_dir):
        return "it is Root Guard's own state (the audit log)"
    if areas.cache_dir and is_within(key, areas.cache_dir):
        return "it is Root Guard's own cache (the kept scans and patterns the inventory trusts)"
    if areas.runtime_dir and is_within(key, areas.runtime_dir):
        return "it is Root Guard's runtime directory (the editor windows the agents' hooks are bound to)"
    for home in areas.agent_homes:
        if is_within(key, home):
            return f"it is an agent's own configuration ({os.path.basename(home)} in the home folder: settings, hooks)"
    agent = _agent_reason(parts)
    if agent is not None:
        return agent
    for admin in areas.admin_dirs:
        if is_within(key, admin):
            return "it is a git worktree's admin directory"
    if len(parts) >= 2 and (parts[-2], parts[-1]) in {(fold(a), fold(b)) for a, b in _AUTORUN_FILES}:
        return f"{parts[-2]}/{parts[-1]} is run or applied by the editor by itself"
    if parts and parts[-1] in {fold(n) for n in _AUTORUN_NAMES}:
        return f"{parts[-1]} is run by the shell by itself (direnv)"
    for part in parts:
        if part in {fold(n) for n in _AUTORUN_DIRS}:
            return f"files below {part} are run by tools by themselves"
    return None


def _agent_reason(parts: list[str]) -> str | None:
    """An agent's configuration, hook or instruction file (``parts``: folded components)."""
    claude = fold(".claude")
    for index, part in enumerate(parts):
        if part in {fold(n) for n in AGENT_DIRS}:
            return f"{part} holds an agent's configuration and hooks (the agent cannot rewrite its own leash)"
        if part == claude:
            rest = parts[index + 1:]
            if not rest:
                return ".claude holds Claude Code's settings and hooks: the directory cannot be replaced"
            if rest[0] == fold("hooks") or (len(rest) == 1 and rest[0].startswith(fold("settings"))
                                            and rest[0].endswith(fold(".json"))):
                return f".claude/{rest[0]} is Claude Code's settings or hooks (the agent cannot rewrite its own leash)"
        if part == fold(".github") and index + 1 < len(parts):
            following = parts[index + 1]
            hooks, instructions = _GITHUB_AGENT_ENTRIES
            if following == fold(hooks):
                return ".github/hooks holds Copilot's hooks (the agent cannot rewrite its own leash)"
            if following == fold(instructions) and index + 2 == len(parts):
                return ".github/copilot-instructions.md is an agent instruction file (it steers the next session)"
    name = parts[-1] if parts else ""
    if name in {fold(n) for n in AGENT_FILES}:
        return f"{name} configures the MCP servers an agent starts"
    if name in {fold(n) for n in INSTRUCTION_FILES}:
        return f"{name} is an agent instruction file (it steers the next session)"
    return None
