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
  scan would hide a credential file from the next widening report).

Only the user file can relax one, and only for a named path: an exact-file user
rule on that very path (a persistent "always" grant is one).

``protected_reason`` is pure: it compares path components.
"""

from __future__ import annotations

import os

from lsp_bridge.core.paths import fold, is_within
from lsp_bridge.core.record import dataclass
from lsp_bridge.core.settings import PROJECT_FILE_NAME

_AUTORUN_FILES = {(".vscode", "settings.json"), (".vscode", "tasks.json"), (".vscode", "launch.json")}
_AUTORUN_NAMES = {".envrc"}
_AUTORUN_DIRS = {".devcontainer", ".husky"}


@dataclass(frozen=True)
class ProtectedAreas:
    """The machine-specific protected places (folded canonical paths)."""

    user_config_dir: str | None = None
    user_file: str | None = None
    state_dir: str | None = None
    admin_dirs: tuple[str, ...] = ()
    cache_dir: str | None = None


def default_areas(user_file: str | None) -> ProtectedAreas:
    """The user configuration directory, ``ROOTGUARD_CONFIG``'s file, the state and the cache directory."""
    from lsp_bridge.core.userdirs import user_cache_dir, user_config_dir, user_state_dir  # platformdirs', lighter

    config_dir = os.path.realpath(user_config_dir())
    state_dir = os.path.realpath(user_state_dir())
    cache_dir = os.path.realpath(user_cache_dir())
    return ProtectedAreas(fold(config_dir), fold(user_file) if user_file else None, fold(state_dir),
                          cache_dir=fold(cache_dir))


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
