"""One editor window's state: folders -> configurations -> scope -> policy.

Every front end (CLI, language server, MCP server) builds its policy here so
they all decide the same way. Session-wide settings (``workspace.roots``,
``worktrees``, version 1 safety booleans) come from the first folder's
configuration: the first folder is the config-bearing checkout. Each folder's
own project file still governs the paths inside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_bridge.core.config import ConfigKeeper, config_candidates
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.scope import Scope, build_scope
from lsp_bridge.core.settings import DENY_ALL, Config

if TYPE_CHECKING:
    from lsp_bridge.core.policy import Policy


@dataclass
class Session:
    """Keeps one configuration per folder and rebuilds the policy on change."""

    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    folders: tuple[str, ...] = ()
    _keepers: dict[str, ConfigKeeper] = field(default_factory=dict)
    scope: Scope | None = None
    _policy: Policy | None = field(default=None, repr=False)

    def set_folders(self, folders: Sequence[str]) -> None:
        self.folders = tuple(folders)
        self._keepers = {f: self._keepers.get(f) or ConfigKeeper(_config_root(f), self.env) for f in self.folders}
        self.rebuild()

    def reload_configs(self) -> list[Diagnostic]:
        for keeper in self._keepers.values():
            keeper.reload()
        self.rebuild()
        return self.config_diagnostics()

    def configs(self) -> list[tuple[str, Config]]:
        return [(f, self._keepers[f].current) for f in self.folders]

    def config_diagnostics(self) -> list[Diagnostic]:
        seen: list[Diagnostic] = []
        for keeper in self._keepers.values():
            for diag in keeper.diagnostics:
                if diag not in seen:
                    seen.append(diag)
        return seen

    def config_files(self) -> list[str]:
        """Every path where a configuration file is or would become active."""
        files: list[str] = []
        for folder in self.folders or (None,):
            for f in config_candidates(_config_root(folder) if folder else None, self.env):
                if f not in files:
                    files.append(f)
        return files

    def rebuild(self) -> None:
        configs = self.configs() or [("/", DENY_ALL)]
        first = configs[0][1]
        self.scope = build_scope(self.folders, first)
        self._policy = None

    @property
    def policy(self) -> Policy:
        """The engine for the current scope and configurations, compiled on first use."""
        if self._policy is None:
            from lsp_bridge.core.policy import Policy

            if self.scope is None:
                self.rebuild()
            assert self.scope is not None  # rebuild() sets it
            self._policy = Policy(self.scope, self.configs() or [("/", DENY_ALL)])
        return self._policy

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = list(self.config_diagnostics())
        if self.scope is not None:
            found += [d for d in self.scope.diagnostics if d not in found]
        return found


def _config_root(folder: str) -> str | None:
    """A folder usable as a project root (absolute), else None: user file only."""
    return folder if isinstance(folder, str) and os.path.isabs(folder) and os.path.isdir(folder) else None


def open_session(folders: Sequence[str], env: Mapping[str, str] = os.environ) -> Session:
    session = Session(env=env)
    session.set_folders(folders)
    return session
