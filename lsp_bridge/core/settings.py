"""The effective configuration, as immutable data.

``config.py`` turns TOML files and the environment into a ``Config``;
``policy.py`` decides with it. Nothing here touches the file system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lsp_bridge.core.diagnostics import Diagnostic

Verdict = Literal["allow", "request", "deny"]
WorktreeMode = Literal["include", "request", "ignore"]
Source = Literal["builtin", "user", "project", "environment", "session", "toolchain", "git"]

PROJECT_FILE_NAME = ".rootguard.toml"  # the project file's one name (config, grants, the language server)
VERDICTS: tuple[str, ...] = ("allow", "request", "deny")
STRICTNESS: dict[str, int] = {"allow": 0, "request": 1, "deny": 2}  # equal specificity: the stricter wins
WORKTREE_MODES: tuple[str, ...] = ("include", "request", "ignore")
GIT_MODES: tuple[str, ...] = ("none", "read", "write")  # [workspace] git: git access inside the boundary
GIT_LOOSENESS: dict[str, int] = {"none": 0, "read": 1, "write": 2}  # a project file may only go down
AGENT_SHELL_MODES: tuple[str, ...] = ("confine", "deny", "allow")  # [agents] shell: an agent's shell tool, via its hook
AGENT_SHELL_STRICTNESS: dict[str, int] = {"allow": 0, "confine": 1, "deny": 2}  # a project file may only go up
DEFAULT_APPROVAL_TIMEOUT = 30.0


@dataclass(frozen=True)
class PathRule:
    """One ``[[paths]]`` entry.

    ``anchor`` is the canonical absolute path the rule is anchored on. A rule
    written with a relative ``path`` also keeps ``base_dir`` (the config-bearing
    checkout it was resolved against) so it can be remapped onto each linked
    worktree. ``delete`` already inherits ``write`` when the file omitted it; an
    operation whose policy is ``None`` is not decided by this rule.
    """

    id: str
    path: str
    anchor: str
    read: Verdict | None = None
    write: Verdict | None = None
    delete: Verdict | None = None
    includes: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    follow_symlinks: bool = False
    base_dir: str | None = None
    source: Source = "user"
    file: str | None = None
    is_file: bool = False  # the anchor was a file (not a directory) when the configuration was loaded

    @property
    def relative(self) -> bool:
        return self.base_dir is not None


@dataclass(frozen=True)
class Mount:
    """A bind mount: host ``source`` (canonical absolute) seen at ``target``."""

    source: str
    target: str
    mode: Literal["ro", "rw"] = "ro"
    origin: str = "config"  # "config" or e.g. ".vscode/mcp.json servers.code-index"
    file: str | None = None


@dataclass(frozen=True)
class Config:
    version: int = 2
    # workspace.roots, canonical absolute; None = the editor's folders are the boundary
    roots: tuple[str, ...] | None = None
    roots_source: Source | None = None
    worktrees: WorktreeMode = "include"
    git: str = "none"  # [workspace] git: none | read | write (core/git_access.py turns it into rules)
    approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    agent_shell: str = "confine"  # [agents] shell: confine | deny | allow
    paths: tuple[PathRule, ...] = ()
    mounts: tuple[Mount, ...] = ()
    # [sandbox] (core/sandbox_settings.py): granted variables; limits, 0 = unlimited
    sandbox_env: tuple[str, ...] = ()
    sandbox_memory: int = 8 << 30
    sandbox_processes: int = 4096
    sandbox_tmp_size: int = 2 << 30
    # Version 1 [safety] meanings, kept while a v1 file is active.
    allow_any_path: bool = False
    allow_external_roots: bool = False
    allow_temp_directory: bool = False
    follow_symlinks: bool = True  # following links inside the baseline when no rule decides
    # Which source made the version 1 meanings active ("project": a cloned repository's
    # file, which may not widen access: its widening booleans only ask for approval).
    safety_source: Source | None = None
    # Where it came from.
    user_file: str | None = None
    project_file: str | None = None
    project_root: str | None = None  # the config-bearing checkout
    files: tuple[str, ...] = ()  # active config files (protected targets), canonical
    diagnostics: tuple[Diagnostic, ...] = field(default=())

    @property
    def identity(self) -> str | None:
        """What makes two roots' policies the same: the project file in force."""
        return self.project_file


DENY_ALL = Config(roots=(), roots_source="builtin")
"""What a caller uses when no configuration has ever loaded: nothing is allowed."""
