"""A hook call's request-level accesses, put to the person through the tray.

The one approval path: the tray's prompt (``TrayClient.request_access``) says which agent,
which tool and which session, and the window the agent is bound to. Answers: allow once,
allow for this session (kept for this agent session in the runtime directory, so the next
hook process sees it), always (the tray writes the rule to the user file), deny, timeout.
With no tray, ``no_approver``: the hook then asks through the agent (Claude's ``ask``) or
denies, saying how to approve.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_bridge.agents.model import Access, ToolCall
from lsp_bridge.agents.windows import sessions_dir

if TYPE_CHECKING:
    from lsp_bridge.agents.boundary import Boundary
    from lsp_bridge.core.policy import Decision

DEFAULT_NEED = {"read": "read", "write": "write", "metadata": "write", "delete": "delete"}
GRANTS_DIR = "agent-grants"
MAX_GRANTS = 4096


@dataclass(frozen=True)
class Outcome:
    answer: str  # allow_once | allow_session | always | deny | timeout | no_approver
    approver: str  # who answered
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.answer in ("allow_once", "allow_session", "always")


def needs(decision: Decision) -> list[tuple[str, str]]:
    """(need, canonical path) pairs an approval of ``decision`` covers."""
    if decision.dest is not None:
        return [("delete", decision.path), ("write", decision.dest.path)]
    return [(DEFAULT_NEED.get(decision.op, "read"), decision.path)]


@dataclass(frozen=True)
class Asked:
    """What the prompt asks about: the operation, (need, path, root) targets, the rule."""

    operation: str
    targets: tuple[tuple[str, str, str | None], ...]
    rule: str | None = None


def asked(decided: Sequence[tuple[Access, Decision]]) -> Asked:
    """The prompt for every request-level access of ``decided``, at once."""
    targets: list[tuple[str, str, str | None]] = []
    for _, decision in decided:
        for need, path in needs(decision):
            root = decision.root if decision.root and path.startswith(decision.root.rstrip("/") + "/") else None
            if (need, path, root) not in targets:
                targets.append((need, path, root))
    first = decided[0][1]
    return Asked(first.op, tuple(targets[:1000]), first.rule)


def ask(call: ToolCall, boundary: Boundary, question: Asked, *, wait: float, summary: str,
        preview: str | None = None, status: dict | None = None) -> Outcome:
    """Ask the tray (``wait``: seconds at most); ``status``: a payload to show first (a widening)."""
    import asyncio

    if wait <= 1:
        return Outcome("timeout", "nobody", "no time left to ask before the agent's hook deadline")
    try:
        return asyncio.run(_ask(call, boundary, question, wait, summary, preview, status))
    except (OSError, ValueError) as err:
        return Outcome("deny", "the tray link", f"asking the tray failed: {err}")


def announce(call: ToolCall, boundary: Boundary, status: dict) -> bool:
    """Show ``status`` (a widening the agent made) in the tray; False when no tray runs."""
    import asyncio

    async def send() -> bool:
        client = _client(call, boundary)
        try:
            if not await client.start():
                return False
            await client.publish_status(status)
            return True
        finally:
            await client.close()

    try:
        return asyncio.run(send())
    except (OSError, ValueError):
        return False


def _client(call: ToolCall, boundary: Boundary):
    from lsp_bridge.approvals.client import TrayClient

    window = boundary.window
    session = f"{call.agent}:{call.session[:32] or os.getpid()}"
    bound = f"bound to {window.label}" if window else "no editor window"
    return TrayClient(session=session, client=f"{call.agent} hook ({bound})", folders=boundary.roots,
                      reconnect=False, connect_timeout=1.0)


async def _ask(call: ToolCall, boundary: Boundary, question: Asked, wait: float, summary: str,
               preview: str | None, status: dict | None) -> Outcome:
    from lsp_bridge.approvals.client import Target

    window = boundary.window
    client = _client(call, boundary)
    try:
        if not await client.start():
            return Outcome("no_approver", "nobody", "no Root Guard tray is running")
        if status is not None:
            await client.publish_status(status)
        countdown = min(boundary.approval_timeout, max(1.0, wait - min(5.0, wait / 4)))
        where = f"window {window.session}: {window.label}" if window else "no editor window: " + ", ".join(boundary.folders)
        tool = f"{call.agent} {call.tool or call.event} (session {call.session[:12] or '?'}, {where})"
        answer = await client.request_access(
            tool=tool[:4000], operation=question.operation,
            targets=[Target(path, None, root, need) for need, path, root in question.targets],
            rule=question.rule, reason=summary[:4000], timeout=wait, timeout_seconds=countdown, preview=preview)
        return Outcome(answer.answer, "the Root Guard tray", answer.reason)
    finally:
        await client.close()


# ---------------------------------------------------------------------------
# "allow for this session": kept per agent session, for the next hook process


def _grants_path(call: ToolCall) -> str | None:
    if not call.session:
        return None
    key = hashlib.sha256(f"{call.agent}\0{call.session}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(os.path.dirname(sessions_dir()), GRANTS_DIR, f"{key}.json")


def granted(call: ToolCall, decision: Decision) -> bool:
    """Whether an earlier "allow for this session" of this agent session covers ``decision``."""
    path = _grants_path(call)
    if path is None:
        return False
    kept = _read_grants(path)
    return all([need, target] in kept for need, target in needs(decision))


def remember(call: ToolCall, question: Asked) -> None:
    from lsp_bridge.approvals.runtime import ensure_private_dir
    from lsp_bridge.core.atomic import atomic_write

    path = _grants_path(call)
    if path is None:
        return
    kept = _read_grants(path)
    kept += [[need, target] for need, target, _ in question.targets if [need, target] not in kept]
    ensure_private_dir(os.path.dirname(os.path.dirname(path)))
    ensure_private_dir(os.path.dirname(path))
    atomic_write(path, json.dumps({"agent": call.agent, "grants": kept[-MAX_GRANTS:]}), mode=0o600)


def _read_grants(path: str) -> list[list[str]]:
    """The kept grants; nothing when the file or its directory is not ours and private."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        info = os.fstat(fd)
        folder = os.lstat(os.path.dirname(path))
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077
                or folder.st_uid != os.getuid() or stat.S_IMODE(folder.st_mode) & 0o077):
            return []
        data = os.read(fd, 1 << 20)
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
    except (ValueError, RecursionError):
        return []
    grants = record.get("grants") if isinstance(record, dict) else None
    if not isinstance(grants, list):
        return []
    return [g for g in grants if isinstance(g, list) and len(g) == 2 and all(isinstance(x, str) for x in g)]
