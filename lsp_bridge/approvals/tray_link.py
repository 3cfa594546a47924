"""The language server's link to the tray: connect, publish status, follow folder changes.

A thin adapter over ``lsp_bridge.approvals.client.TrayClient`` (which reconnects on its own and
denies pending requests at once when the tray goes away). Approvals are asked by
``lsp_bridge.approvals.service``, which uses ``client`` directly.
"""

from __future__ import annotations

import asyncio
import logging

from lsp_bridge.approvals.client import TrayClient

log = logging.getLogger("rootguard.lsp.tray")


class TrayLink:
    def __init__(self, client: TrayClient):
        self.client = client
        self._tasks: set[asyncio.Task] = set()

    @classmethod
    def start(cls, ls) -> TrayLink:
        tracker = ls.tracker
        client = TrayClient(session=tracker.session_id, client=ls.client_name, folders=tracker.session.folders)
        client.on_acknowledge = ls.acknowledge  # the tray's "Acknowledge widening" button
        client.on_withdraw = ls.withdraw  # the tray's "Withdraw acknowledgement"
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

    def close(self) -> None:
        self._spawn(self.client.close())
