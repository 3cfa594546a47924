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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lsp_bridge.core import toolchain as toolchain_rules
from lsp_bridge.core.config import ConfigKeeper, Held, config_candidates
from lsp_bridge.core.config_trust import Recorded, RecordError, TrustStore
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import is_within, realpath
from lsp_bridge.core.scope import Scope, build_scope
from lsp_bridge.core.settings import DENY_ALL, Config
from lsp_bridge.core.toolchain import Refusal, ToolchainMount

if TYPE_CHECKING:  # compiled on first use: the language server's first status needs no policy
    from lsp_bridge.core.policy import Policy


@dataclass
class Session:
    """Keeps one configuration per folder and rebuilds the policy on change."""

    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    # Where each root's approved configuration is kept (None: nothing is compared across sessions).
    store: TrustStore | None = field(default_factory=TrustStore.default)
    folders: tuple[str, ...] = field(default=(), init=False)  # canonical: only ``set_folders`` sets them
    _keepers: dict[str, ConfigKeeper] = field(default_factory=dict)
    _extra: dict[str, ConfigKeeper] = field(default_factory=dict)  # roots that are not folders
    scope: Scope | None = None
    _policy: Policy | None = field(default=None, repr=False)
    _policy_configs: list[tuple[str, Config]] = field(default_factory=list, repr=False)
    # Toolchain mounts (``core.toolchain``): None until a command that mounts or shows them sets them.
    _toolchain: tuple[ToolchainMount, ...] | None = None
    _toolchain_held: tuple[ToolchainMount, ...] = ()
    _toolchain_refused: tuple[Refusal, ...] = ()
    _toolchain_change: Held | None = None

    def set_folders(self, folders: Sequence[str]) -> None:
        """Each folder by its canonical name (``canonical_folders``): every entry point, whatever it was
        given, keeps one configuration and one approved record per folder."""
        self.folders = canonical_folders(folders)
        self._keepers = {f: self._keepers.get(f) or self._keeper(f) for f in self.folders}
        self.rebuild()

    def _keeper(self, folder: str) -> ConfigKeeper:
        return ConfigKeeper(_config_root(folder), self.env, store=self.store, agent_writable=self.agent_writable)

    def agent_writable(self, path: str) -> bool:
        """Whether an agent working in this session can write at ``path``: inside a folder or another
        union entry (a worktree, a configured root). Only a configuration change made there is held."""
        areas = [*self.folders, *(e.path for e in self.scope.union.entries)] if self.scope else list(self.folders)
        return any(is_within(path, area) for area in areas)

    def reload_configs(self, *, trusted: bool = True) -> list[Diagnostic]:
        """Reload every configuration. ``trusted=False``: a file changed while the session
        ran (the agent may have caused it), so a loosening change is held, not applied."""
        for keeper in [*self._keepers.values(), *self._extra.values()]:
            keeper.reload(trusted=trusted)
        self.rebuild()
        return self.config_diagnostics()

    def held(self) -> list[str]:
        """One line per held (loosening) configuration change, for the person."""
        lines = [d.message for k in [*self._keepers.values(), *self._extra.values()] if k.held
                 for d in k.diagnostics if d.code == "config-change-held"]
        if self._toolchain_change is not None:
            lines += list(self._toolchain_change.reasons)
        return lines

    def held_changes(self) -> list[tuple[str, Held]]:
        """(root, the held change) for each root whose configuration on disk waits for approval."""
        keepers = [*self._keepers.items(), *self._extra.items()]
        found = [(root, keeper.held) for root, keeper in keepers if keeper.held is not None]
        first = self._toolchain_root()
        if self._toolchain_change is not None and first is not None:
            found.append((first[0], self._toolchain_change))
        return found

    def accept_held(self) -> bool:
        accepted = [k.accept_held() for k in [*self._keepers.values(), *self._extra.values()]]
        if self._toolchain_change is not None:
            accepted.append(self._accept_toolchain())
        if any(accepted):
            self.rebuild()
        return any(accepted)

    # -- toolchain mounts ---------------------------------------------------------

    def _toolchain_root(self) -> tuple[str, ConfigKeeper] | None:
        """The root whose record keeps the approved toolchain set: the first folder (or root)."""
        keepers = [*self._keepers.items(), *self._extra.items()]
        return keepers[0] if keepers else None

    def held_toolchain(self, found: Sequence[ToolchainMount]) -> tuple[ToolchainMount, ...]:
        """Which of ``found`` ``set_toolchain`` would hold, without giving the session anything or recording."""
        record = self._approved_record()
        return toolchain_rules.settle(found, record.toolchain if record is not None else None,
                                      self.agent_writable).held

    def _approved_record(self) -> Recorded | None:
        first = self._toolchain_root()
        if self.store is None or first is None:
            return None
        try:
            return self.store.recorded(first[1].project_root)
        except (RecordError, OSError):
            return None  # the keeper already said the record is unreadable: taken as approved

    def set_toolchain(self, found: Sequence[ToolchainMount], refused: Sequence[Refusal] = ()) -> None:
        """Make the toolchain mounts ``found`` for this session's union rules of the engine (source
        ``toolchain``), except a mount added since the last approved session that a file the agent can
        write asked for: that one is held (``held_changes``) until the person approves it. A mount that
        went away is gone at once, and the approved set recorded again."""
        record = self._approved_record()
        approved = record.toolchain if record is not None else None
        settled = toolchain_rules.settle(found, approved, self.agent_writable)
        self._toolchain, self._toolchain_held = settled.in_force, settled.held
        self._toolchain_refused = tuple(refused)
        self._toolchain_change = None
        first = self._toolchain_root()
        if settled.held and first is not None:
            base = record if record is not None else Recorded()
            wanted = tuple(sorted({*settled.approved, *(m.path for m in settled.held)}))
            reasons = tuple(f"{toolchain_rules.describe(m)} is new and a file the agent can write asked for it; "
                            "it is not mounted until you approve it (rootguard config approve)" for m in settled.held)
            self._toolchain_change = Held(first[1].current, replace(base, toolchain=wanted), reasons, record)
        if self.store is not None and first is not None and record is not None and settled.approved != approved:
            self._record_toolchain(first[1], record, settled.approved)
        self.rebuild()

    def _record_toolchain(self, keeper: ConfigKeeper, record: Recorded, paths: tuple[str, ...]) -> None:
        assert self.store is not None
        try:
            self.store.record(keeper.project_root, replace(record, toolchain=paths))
        except OSError:
            pass  # read-only state (inside a sandbox): the next session compares again

    def _accept_toolchain(self) -> bool:
        change, first = self._toolchain_change, self._toolchain_root()
        if change is None or first is None:
            return False
        self._toolchain_change = None
        self._toolchain = (*(self._toolchain or ()), *self._toolchain_held)
        self._toolchain_held = ()
        record = self._approved_record() or Recorded()
        if self.store is not None:
            self._record_toolchain(first[1], record, change.recorded.toolchain or ())
        return True

    def toolchain(self) -> tuple[tuple[ToolchainMount, ...], tuple[ToolchainMount, ...], tuple[Refusal, ...]] | None:
        """(mounts in force, mounts held, refused paths); None when no toolchain set was given."""
        if self._toolchain is None:
            return None
        return self._toolchain, self._toolchain_held, self._toolchain_refused

    def configs(self) -> list[tuple[str, Config]]:
        return [(f, self._keepers[f].current) for f in self.folders]

    def config_diagnostics(self) -> list[Diagnostic]:
        seen: list[Diagnostic] = []
        for keeper in [*self._keepers.values(), *self._extra.values()]:
            for diag in keeper.diagnostics:
                if diag not in seen:
                    seen.append(diag)
        return seen

    def config_files(self) -> list[str]:
        """Every path where a configuration file is or would become active."""
        files: list[str] = []
        places: list[str | None] = [*self.folders, *self._extra]
        for folder in places or [None]:
            for f in config_candidates(_config_root(folder) if folder else None, self.env):
                if f not in files:
                    files.append(f)
        return files

    def rebuild(self) -> None:
        configs = self.configs() or [("/", DENY_ALL)]
        first = configs[0][1]
        self.scope = build_scope(self.folders, first)
        self._policy_configs = configs + self._root_configs()
        if self._toolchain:  # rules of their own source, ranked below every configured rule (rules.winner)
            extra = toolchain_rules.rules(self._toolchain)
            self._policy_configs = [(root, replace(config, paths=(*config.paths, *extra)))
                                    for root, config in self._policy_configs]
        self._policy = None

    @property
    def policy(self) -> Policy:
        """The engine for the current scope and configurations, compiled on first use."""
        if self._policy is None:
            from lsp_bridge.core.policy import Policy

            if self.scope is None:
                self.rebuild()
            assert self.scope is not None  # rebuild() sets it
            self._policy = Policy(self.scope, self._policy_configs or [("/", DENY_ALL)])
        return self._policy

    def _root_configs(self) -> list[tuple[str, Config]]:
        """Every root loads its own configuration, wherever it came from (ROOTGUARD_ROOTS,
        workspace.roots): a root that is not an editor folder gets its own keeper."""
        found: list[tuple[str, Config]] = []
        wanted = set()
        for entry in self.scope.union.entries if self.scope else ():
            if entry.origin not in ("config", "environment") or entry.path in self.folders:
                continue
            wanted.add(entry.path)
            keeper = self._extra.get(entry.path)
            if keeper is None:
                keeper = self._extra[entry.path] = self._keeper(entry.path)
            found.append((entry.path, keeper.current))
        for gone in set(self._extra) - wanted:
            del self._extra[gone]
        return found

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = list(self.config_diagnostics())
        if self.scope is not None:
            found += [d for d in self.scope.diagnostics if d not in found]
        return found


def canonical_folders(folders: Sequence[str]) -> tuple[str, ...]:
    """``folders`` by their canonical names (symbolic links, ``.``, ``..``, doubled and trailing slashes
    resolved), each once. The approved configuration is kept per folder: another spelling of a root
    must find that root's record, never a fresh one that approves what is on disk. A relative folder
    (or one with a NUL byte) stays as given: the scope rejects it with a diagnostic."""
    found: list[str] = []
    for folder in folders:
        usable = isinstance(folder, str) and os.path.isabs(folder) and "\x00" not in folder
        path = realpath(folder) if usable else folder
        if path not in found:
            found.append(path)
    return tuple(found)


def _config_root(folder: str) -> str | None:
    """A folder usable as a project root (absolute), else None: user file only."""
    return folder if isinstance(folder, str) and os.path.isabs(folder) and os.path.isdir(folder) else None


def open_session(folders: Sequence[str], env: Mapping[str, str] = os.environ, *,
                 store: TrustStore | None = None) -> Session:
    """The session of ``folders``; each root's configuration is compared with the one it was last
    approved with (``store``: the user's own by default)."""
    session = Session(env=env, store=store if store is not None else TrustStore.default())
    session.set_folders(folders)
    return session
