"""The language server's link to the tray: publish status, ask for approvals.

A thin adapter over ``lsp_bridge.approvals.client.TrayClient`` (which reconnects on its own and
denies pending requests at once when the tray goes away). ``ask`` returns None
when no tray is connected, so the caller can fall back to the editor.
"""

from __future__ import annotations

import asyncio
import logging

from lsp_bridge.approvals.client import Target, TrayClient

log = logging.getLogger("rootguard.lsp.tray")

_ANSWERS = {
    "allow_once": ("allow", "Allow once"),
    "allow_session": ("allow", "Allow for this session"),
    "always": ("allow", "Always (rule written to the user configuration)"),
    "deny": ("deny", "denied in the Root Guard tray"),
    "timeout": ("deny", "no answer in time: denied once, nothing stored"),
}


class TrayLink:
    def __init__(self, client: TrayClient):
        self.client = client
        self._tasks: set[asyncio.Task] = set()

    @classmethod
    def start(cls, ls) -> "TrayLink":
        tracker = ls.tracker
        client = TrayClient(session=tracker.session_id, client=ls.client_name, folders=tracker.session.folders)
        client.on_acknowledge = ls.acknowledge  # the tray's "Acknowledge widening" button
        link = cls(client)

        async def connect() -> None:
            if await link.client.start():
                ls.send_status()  # now with "approver": "tray", and the tray gets it too

        link._spawn(connect())
        return link

    @property
    def connected(self) -> bool:
        return self.client.connected

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def publish_status(self, status: dict) -> None:
        self._spawn(self.client.publish_status(status))

    def set_folders(self, folders) -> None:
        self._spawn(self.client.set_folders(folders))

    async def ask(self, decision, tool: str, timeout: float):
        """(verdict, how) from the tray, or None when no tray is connected."""
        if not self.client.connected:
            return None
        source_need = "delete" if decision.dest is not None else None  # rename: delete the source
        targets = [Target(decision.path, root=decision.root, need=source_need)]
        if decision.dest is not None:
            targets.append(Target(decision.dest.path, root=decision.dest.root, need="write"))
        answer = await self.client.request_access(
            tool=tool,
            operation=decision.op,
            targets=targets,
            rule=decision.rule,
            reason=decision.reason,
            timeout=timeout + 5.0,  # the tray's countdown decides first; this is the hard stop
            timeout_seconds=timeout,
        )
        if answer.answer == "no_approver":
            return None
        return _ANSWERS.get(answer.answer, ("deny", f"unexpected answer {answer.answer!r}: denied"))

    def close(self) -> None:
        self._spawn(self.client.close())
