"""The boundary a hook call is decided against, and the engine's verdict on its accesses.

The roots are the live union of the editor window whose folders contain the agent's
working directory (``windows``); with no window, the agent's project folder
(``CLAUDE_PROJECT_DIR``, ``GEMINI_PROJECT_DIR``, else the hook's ``cwd``; Copilot's is always
its ``cwd``). A sessions directory that exists but cannot be trusted is a ``BoundaryError`` (the
call is blocked), never that fallback. The agent's own extra directories (``places.extra_dirs``) are roots too. The
session is built from those folders exactly as ``rootguard check --root`` builds it
(``core.session.open_session``), and every access is decided by its ``Policy.decide``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_bridge.agents.model import Access, ToolCall
from lsp_bridge.agents.places import ExtraDir, extra_dirs
from lsp_bridge.agents.windows import UntrustedSessions, Window, published_windows, window_for

if TYPE_CHECKING:
    from lsp_bridge.core.policy import Decision
    from lsp_bridge.core.session import Session

# The variable naming the folder the agent was started in. Not Copilot's: Copilot CLI sets COPILOT_PROJECT_DIR
# (and CLAUDE_PROJECT_DIR) to the git repository's top, wider than the folder it was started in, which its
# hook input's ``cwd`` names (tests/test_agents_e2e.py: taking the variable let a repository's .env through).
PROJECT_VARIABLES = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}
STRICTNESS = {"allow": 0, "request": 1, "deny": 2}


class BoundaryError(Exception):
    """No boundary can be built (an invalid configuration, a folder that is gone): the call is blocked."""


@dataclass
class Boundary:
    folders: tuple[str, ...]  # the window's folders, or the agent's project folder
    extra: tuple[ExtraDir, ...]  # the agent's own extra directories (widenings)
    window: Window | None
    session: Session
    problems: list[str] = field(default_factory=list)  # published records that were refused

    @property
    def roots(self) -> tuple[str, ...]:
        """What ``rootguard run --root`` is given: the folders, then the extra directories."""
        return tuple(dict.fromkeys([*self.folders, *(e.path for e in self.extra if os.path.isdir(e.path))]))

    @property
    def shell_mode(self) -> str:
        """``[agents] shell``: the strictest of the session's configurations."""
        from lsp_bridge.core.settings import AGENT_SHELL_STRICTNESS

        modes = [config.agent_shell for _, config in self.session.configs()] or ["deny"]
        return max(modes, key=lambda m: AGENT_SHELL_STRICTNESS.get(m, 2))

    @property
    def approval_timeout(self) -> float:
        configs = self.session.configs()
        return float(configs[0][1].approval_timeout) if configs else 30.0

    @property
    def user_file(self) -> str | None:
        from lsp_bridge.core.config import user_config_path

        try:
            return user_config_path(self.session.env)
        except ValueError:
            return None

    def describe(self) -> str:
        if self.window is not None:
            return f"the editor window {self.window.label} (session {self.window.session})"
        return "the agent's project folder " + ", ".join(self.folders)


def project_folder(call: ToolCall, env: Mapping[str, str]) -> str:
    """The agent's project folder: its project variable when it names a directory, else ``cwd``."""
    variable = PROJECT_VARIABLES.get(call.agent)
    value = env.get(variable, "") if variable else ""
    if value and os.path.isabs(value) and "\x00" not in value and os.path.isdir(value):
        return value
    if not os.path.isdir(call.cwd):
        raise BoundaryError(f"the hook's cwd {call.cwd} is not an existing directory")
    return call.cwd


def boundary_for(call: ToolCall, env: Mapping[str, str]) -> Boundary:
    """The window (or project) and the agent's extra directories, as one session."""
    from lsp_bridge.agents.places import SettingsError

    problems: list[str] = []
    try:
        window = window_for(call.cwd, published_windows(problems))
    except UntrustedSessions as err:
        # the window may be narrower than the agent's project folder: falling back would widen
        raise BoundaryError(f"the editor windows' directory {err.path} cannot be trusted ({err.why}), so the "
                            "editor window this call is bound to cannot be known; make it a private directory "
                            "of yours (mode 0700) or remove it") from None
    folders = tuple(f for f in window.folders if os.path.isdir(f)) if window is not None else ()
    if window is not None and not folders:
        raise BoundaryError(f"the editor window {window.label} has no folder left on disk")
    project = folders[0] if folders else project_folder(call, env)
    if not folders:
        folders = (project,)
    try:
        extra = tuple(extra_dirs(call.agent, project, env))
    except SettingsError as err:
        raise BoundaryError(f"cannot read the agent's settings: {err}") from None
    session = open_checked([*folders, *(e.path for e in extra if os.path.isdir(e.path))], env)
    return Boundary(folders, extra, window, session, problems)


def open_checked(folders: Sequence[str], env: Mapping[str, str]) -> Session:
    """``open_session`` as ``rootguard check`` opens it: an invalid configuration is an error."""
    from lsp_bridge.core.session import open_session

    session = open_session(list(dict.fromkeys(folders)), env)
    broken = [d for d in session.config_diagnostics() if d.severity == "error"]
    if broken:
        shown = "; ".join(d.format() if d.file else d.message for d in broken[:3])
        raise BoundaryError(f"invalid configuration: {shown}")
    return session


def decide(accesses: Sequence[Access], session: Session) -> list[tuple[Access, Decision]]:
    """The engine's decision for every access (``Policy.decide``, as ``rootguard check``)."""
    from lsp_bridge.core.policy import PolicyInputError

    policy = session.policy
    found = []
    for access in accesses:
        try:
            found.append((access, policy.decide(access.op, access.path, access.dest)))
        except PolicyInputError as err:
            raise BoundaryError(f"cannot decide {access.op} {access.path}: {err}") from None
    return found


def verdict(decided: Sequence[tuple[Access, Decision]]) -> str:
    """The strictest decision; no access at all is no objection."""
    if not decided:
        return "allow"
    return max((d.decision for _, d in decided), key=STRICTNESS.__getitem__)


def pending(decided: Sequence[tuple[Access, Decision]], wanted: str) -> list[tuple[Access, Decision]]:
    return [(a, d) for a, d in decided if d.decision == wanted]


def shown_access(decision: Decision) -> str:
    target = decision.path
    if decision.dest is not None:
        target += f" → {decision.dest.path}"
    return f"{decision.op} of {target}"


def rule_text(decision: Decision) -> str:
    if decision.rule:
        return f"rule {decision.rule}" + (f", {decision.rule_source} file" if decision.rule_source else "")
    return "no rule: the host baseline"


def check_command(boundary: Boundary, decision: Decision) -> str:
    import shlex

    args = ["rootguard", "check"]
    for root in boundary.roots:
        args += ["--root", root]
    args += ["--op", decision.op, decision.path]
    if decision.dest is not None:
        args.append(decision.dest.path)
    return shlex.join(args)


def deny_reason(call: ToolCall, boundary: Boundary, decision: Decision) -> str:
    where = f"the user file {boundary.user_file}" if boundary.user_file else "the user configuration"
    place = "that editor window" if boundary.window is not None else "an editor window (or run the agent there)"
    return (f"Root Guard: {call.agent} {call.tool}: {shown_access(decision)} denied ({rule_text(decision)}): "
            f"{decision.reason}. Bound to {boundary.describe()}. To get access, open the folder in {place} "
            f"or add a [[paths]] rule to {where}; `{check_command(boundary, decision)}` explains it.")


def request_reason(call: ToolCall, boundary: Boundary, decision: Decision) -> str:
    return (f"Root Guard: {call.agent} {call.tool}: {shown_access(decision)} needs approval ({rule_text(decision)}): "
            f"{decision.reason}.")


def no_approver_reason(call: ToolCall, boundary: Boundary, decision: Decision) -> str:
    return (request_reason(call, boundary, decision) + " No Root Guard tray is running to ask you, so it is denied: "
            "start the tray (`rootguard tray`) and let the agent retry to approve it there, or add a [[paths]] "
            "rule to the user file.")
