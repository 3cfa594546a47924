"""Protected targets: paths whose mutation is always at least ``request``.

Built into the engine (PRODUCT.md "Decision semantics"), not a default rule a
project file could override. Writing, creating, renaming onto or from, or deleting:

* every *candidate* configuration file, loaded or not: a file named
  ``.rootguard.toml`` anywhere, the user configuration directory (and the file
  ``ROOTGUARD_CONFIG`` names);
* anything named ``.git`` and everything below a ``.git`` directory (hooks,
  ``config``: git runs them by itself);
* files editors and shells run or apply by themselves: ``.vscode/settings.json``,
  ``.vscode/tasks.json``, ``.vscode/launch.json``, ``.zed/settings.json``, ``.zed/tasks.json``,
  ``.envrc``, ``.devcontainer.json``, ``.pre-commit-config.yaml``, any ``*.code-workspace``
  (its folders widen the editor's roots), ``.devcontainer/**``, ``.husky/**``;
* Root Guard's own state (the audit log's directory) and its cache directory (the kept
  scans, git history answers and compiled patterns the inventory trusts: a forged kept
  scan would hide a credential file from the next widening report), and its runtime
  directory, where editor windows publish their folders for the agents' hooks;
* every agent's own configuration, hook, command and instruction files, existing or not:
  ``.claude/**`` (settings, hooks, commands, agents; and the directory entry itself),
  ``.mcp.json``, ``opencode.json(c)``, ``.aider.conf.yml``, everything below ``.codex``,
  ``.gemini``, ``.copilot``, ``.cursor``, ``.windsurf``, ``.amazonq``, ``.kiro``, ``.roo``,
  ``.continue``, ``.opencode``, ``.github/hooks``, ``.github/instructions``, ``.github/prompts``,
  ``.github/agents``, ``.github/chatmodes``, and ``.vscode/mcp.json``;
* agent instruction files (``AGENTS.md``, ``CLAUDE.md``, ``CLAUDE.local.md``, ``GEMINI.md``,
  ``.cursorrules``, ``.windsurfrules``, ``.github/copilot-instructions.md``): agents load them
  into the next session's prompt;
* user-level paths (below the home folder, for a root that holds it): the agents' homes
  ``~/.claude``, ``~/.codex`` (``$CODEX_HOME``), ``~/.gemini``, ``~/.copilot`` as a whole,
  Claude Code's ``~/.claude.json``; git's ``~/.gitconfig``, ``$GIT_CONFIG_GLOBAL`` and
  ``~/.config/git/``; each VS Code-family editor's user and machine ``settings.json``,
  ``mcp.json``, ``tasks.json`` (profiles too: ``User/profiles/*/``), for VS Code, Insiders,
  Code - OSS, VSCodium, Cursor, Windsurf, code-server and the remote servers
  (``rootguard.serverCommand`` in those settings replaces the guard itself).

Only the user file can relax one, and only for a named path: an exact-file user
rule on that very path (a persistent "always" grant is one).

``protected_reason`` is pure: it compares path components.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from lsp_bridge.core.paths import fold, is_within
from lsp_bridge.core.places import state_dir
from lsp_bridge.core.settings import PROJECT_FILE_NAME

# -- names: protected in any folder -----------------------------------------------------------------
_AUTORUN_FILES = {(".vscode", "settings.json"), (".vscode", "tasks.json"), (".vscode", "launch.json"),
                  (".vscode", "mcp.json"), (".zed", "settings.json"), (".zed", "tasks.json")}
_AUTORUN_NAMES = {".envrc", ".devcontainer.json", ".pre-commit-config.yaml"}
_AUTORUN_SUFFIXES = (".code-workspace",)  # a workspace file: its folders and settings apply when it is opened
_AUTORUN_DIRS = {".devcontainer", ".husky"}
AGENT_DIRS = (".codex", ".gemini", ".copilot", ".cursor", ".windsurf", ".amazonq", ".kiro", ".roo", ".continue",
              ".opencode")  # everything below is an agent's configuration
AGENT_FILES = (".mcp.json", "opencode.json", "opencode.jsonc", ".aider.conf.yml")  # wherever it sits
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules", ".windsurfrules")
# Below a .github directory (``_agent_reason``): directories of agent hooks, instructions, prompts, agents.
_GITHUB_AGENT_DIRS = ("hooks", "instructions", "prompts", "agents", "chatmodes")
_GITHUB_INSTRUCTIONS = "copilot-instructions.md"

# -- user-level paths: below the home folder -----------------------------------------------------------
AGENT_HOMES = (".claude", ".codex", ".gemini", ".copilot")  # below the home folder: protected as a whole
# VS Code-family editors' data directories (below the configuration, data or home directory), whose
# ``User`` and ``Machine`` directories hold the settings, MCP servers and tasks they apply by themselves.
_EDITOR_CONFIG_DIRS = ("Code", "Code - Insiders", "Code - OSS", "VSCodium", "Cursor", "Windsurf")
_EDITOR_DATA_DIRS = ("code-server",)
_EDITOR_HOME_DIRS = (".vscode-server/data", ".vscode-server-insiders/data", ".vscode-oss-server/data",
                     ".cursor-server/data", ".windsurf-server/data")
EDITOR_USER_FILES = ("settings.json", "mcp.json", "tasks.json")

# The names a walk looking for protected targets stops at (``sandbox/profile.py``), derived from the
# lists above so that they cannot drift apart: a name anywhere, a name ending so, a name below a
# directory of the given name. ``protected_reason`` still confirms each candidate; the user-level
# paths are named by ``user_level_paths`` instead.
PROTECTED_NAMES = frozenset({".git", PROJECT_FILE_NAME, *_AUTORUN_NAMES, *_AUTORUN_DIRS, ".claude", *AGENT_DIRS,
                             *AGENT_FILES, *INSTRUCTION_FILES})
PROTECTED_SUFFIXES = _AUTORUN_SUFFIXES
PROTECTED_CHILDREN: dict[str, frozenset[str]] = {
    **{parent: frozenset(name for directory, name in _AUTORUN_FILES if directory == parent)
       for parent, _ in _AUTORUN_FILES},
    ".github": frozenset({*_GITHUB_AGENT_DIRS, _GITHUB_INSTRUCTIONS}),
}


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
    user_files: tuple[tuple[str, str], ...] = ()  # (a user-level file or directory, why it is protected)
    editor_dirs: tuple[str, ...] = ()  # each editor's User and Machine directory (``EDITOR_USER_FILES``)


def default_areas(user_file: str | None) -> ProtectedAreas:
    """The user configuration directory, ``ROOTGUARD_CONFIG``'s file, the state and the cache directory."""
    import platformdirs

    config_dir = os.path.realpath(platformdirs.user_config_dir("rootguard"))
    state = os.path.realpath(state_dir())
    cache_dir = os.path.realpath(platformdirs.user_cache_dir("rootguard"))
    return ProtectedAreas(fold(config_dir), fold(user_file) if user_file else None, fold(state),
                          cache_dir=fold(cache_dir), runtime_dir=fold(os.path.realpath(runtime_dir())),
                          agent_homes=agent_homes(), user_files=user_files(), editor_dirs=editor_dirs())


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


def user_files() -> tuple[tuple[str, str], ...]:
    """Claude Code's ``~/.claude.json`` and git's user configuration, folded, canonical, with the reason."""
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return ()
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    config_home = xdg if os.path.isabs(xdg) else os.path.join(home, ".config")
    git_why = "it is git's user configuration (its aliases, hooks path, fsmonitor and filters run commands)"
    found = [(os.path.join(home, ".claude.json"), "it is Claude Code's user configuration (its MCP servers run commands)"),
             (os.path.join(home, ".gitconfig"), git_why), (os.path.join(config_home, "git"), git_why)]
    global_file = os.environ.get("GIT_CONFIG_GLOBAL", "")
    if os.path.isabs(global_file):
        found.append((global_file, git_why))
    return tuple(dict.fromkeys((fold(os.path.realpath(p)), why) for p, why in found))


def editor_dirs() -> tuple[str, ...]:
    """The ``User`` and ``Machine`` directories of every VS Code-family editor, folded, canonical."""
    import platformdirs

    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return ()
    config, data = platformdirs.user_config_dir(roaming=True), platformdirs.user_data_dir(roaming=True)
    bases = [*(os.path.join(config, n) for n in _EDITOR_CONFIG_DIRS), *(os.path.join(data, n) for n in _EDITOR_DATA_DIRS),
             *(os.path.join(home, n) for n in _EDITOR_HOME_DIRS)]
    return tuple(dict.fromkeys(fold(os.path.realpath(os.path.join(b, kind))) for b in bases for kind in ("User", "Machine")))


def user_level_paths(areas: ProtectedAreas) -> list[str]:
    """Every user-level protected path a sandbox binds read-only where it exists: the user files and each
    editor's settings, MCP and tasks files, its existing profiles' included."""
    found = [path for path, _ in areas.user_files]
    for directory in areas.editor_dirs:
        if not os.path.isdir(directory):
            continue
        places = [directory]
        with contextlib.suppress(OSError), os.scandir(os.path.join(directory, "profiles")) as profiles:
            places += [p.path for p in profiles if p.is_dir(follow_symlinks=False)]
        found += [os.path.join(place, name) for place in places for name in EDITOR_USER_FILES]
    return found


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
    for place, why in areas.user_files:
        if is_within(key, place):
            return why
    editor = _editor_reason(key, areas.editor_dirs)
    if editor is not None:
        return editor
    agent = _agent_reason(parts)
    if agent is not None:
        return agent
    for admin in areas.admin_dirs:
        if is_within(key, admin):
            return "it is a git worktree's admin directory"
    if len(parts) >= 2 and (parts[-2], parts[-1]) in {(fold(a), fold(b)) for a, b in _AUTORUN_FILES}:
        return f"{parts[-2]}/{parts[-1]} is run or applied by the editor by itself"
    if parts and parts[-1] in {fold(n) for n in _AUTORUN_NAMES}:
        return f"{parts[-1]} is run or applied by a tool by itself (direnv, the editor, git's pre-commit hook)"
    if parts and parts[-1].endswith(tuple(fold(s) for s in _AUTORUN_SUFFIXES)):
        return f"{parts[-1]} is an editor workspace file (its folders widen the editor's roots, its settings apply)"
    for part in parts:
        if part in {fold(n) for n in _AUTORUN_DIRS}:
            return f"files below {part} are run by tools by themselves"
    return None


def _editor_reason(key: str, editor_dirs: tuple[str, ...]) -> str | None:
    """An editor's user-level settings, MCP or tasks file (``key``: folded canonical path)."""
    files = {fold(n) for n in EDITOR_USER_FILES}
    for directory in editor_dirs:
        if not is_within(key, directory) or key == directory:
            continue
        rest = key[len(directory):].strip(os.sep).split(os.sep)
        if (len(rest) == 1 and rest[0] in files) or (len(rest) == 3 and rest[0] == fold("profiles") and rest[2] in files):
            return (f"it is the editor's user {rest[-1]} (applied by itself; rootguard.serverCommand there "
                    "replaces the guard)")
    return None


def _agent_reason(parts: list[str]) -> str | None:
    """An agent's configuration, hook or instruction file (``parts``: folded components)."""
    claude = fold(".claude")
    github_dirs = {fold(n) for n in _GITHUB_AGENT_DIRS}
    for index, part in enumerate(parts):
        if part in {fold(n) for n in AGENT_DIRS}:
            return f"{part} holds an agent's configuration and hooks (the agent cannot rewrite its own leash)"
        if part == claude:
            if index + 1 == len(parts):
                return ".claude holds Claude Code's settings and hooks: the directory cannot be replaced"
            return (f".claude/{parts[index + 1]} is Claude Code's configuration (settings, hooks, commands, agents: "
                    "the agent cannot rewrite its own leash)")
        if part == fold(".github") and index + 1 < len(parts):
            following = parts[index + 1]
            if following in github_dirs:
                return f".github/{following} holds Copilot's hooks, instructions or agents (it steers the next session)"
            if following == fold(_GITHUB_INSTRUCTIONS) and index + 2 == len(parts):
                return ".github/copilot-instructions.md is an agent instruction file (it steers the next session)"
    name = parts[-1] if parts else ""
    if name in {fold(n) for n in AGENT_FILES}:
        return f"{name} configures the MCP servers or commands an agent starts"
    if name in {fold(n) for n in INSTRUCTION_FILES}:
        return f"{name} is an agent instruction file (it steers the next session)"
    return None
