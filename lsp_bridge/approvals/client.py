"""Client library for the tray socket (asyncio, no Qt): used by the language server and the MCP server.

    client = TrayClient(session="a1b2", client="rootguard-lsp", folders=["/Users/me/repo"])
    await client.start()                      # False when no tray runs; keeps retrying
    await client.publish_status(status_dict)  # remembered and re-sent after a reconnect
    decision = await client.request_access(
        tool="write_file", operation="write",
        targets=[Target("/Users/me/repo/.env", relative=".env", root="/Users/me/repo")],
        rule="protect-env", reason="matches an exclude", timeout=300)
    if decision.allowed: ...                  # allow_once | allow_session | always
    await client.close()

Fail closed: with no tray connected ``request_access`` returns ``no_approver`` at
once; if the connection drops while requests wait, each gets ``deny`` at once; if
the deadline passes, ``timeout`` (and the tray is told to drop the prompt).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
import uuid
from collections.abc import Iterable

from lsp_bridge.approvals import protocol
from lsp_bridge.approvals.protocol import Decision, ProtocolError, Target
from lsp_bridge.approvals.runtime import peer_uid

log = logging.getLogger("rootguard.tray.client")

DEFAULT_TIMEOUT = 300.0  # the requester's hard limit; the tray's own countdown is usually shorter
READ_CHUNK = 65536

__all__ = ["TrayClient", "Decision", "Target"]


class TrayClient:
    """One session's connection to the tray; reconnects with backoff and republishes."""

    def __init__(
        self,
        session: str,
        client: str,
        folders: Iterable[str] = (),
        *,
        socket: str | None = None,
        pid: int | None = None,
        reconnect: bool = True,
        backoff: tuple[float, float] = (0.1, 5.0),
        connect_timeout: float = 2.0,
    ):
        self.session = session
        self.client = client
        self.folders = tuple(folders)
        self.socket = socket or protocol.socket_path()
        self.pid = os.getpid() if pid is None else pid
        self.reconnect = reconnect
        self.backoff = backoff
        self.connect_timeout = connect_timeout
        self.tray_timeout: float | None = None  # the tray's [approvals] timeout_seconds
        self.stray_decisions = 0  # decisions for requests no longer waiting (should stay 0)
        self.queued: set[str] = set()  # ids the tray has put in front of the user
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None
        self._keeper: asyncio.Task | None = None
        self._connected = False
        self._closed = False
        self._lost = asyncio.Event()
        self._waiting: dict[str, asyncio.Future] = {}
        self._welcome: asyncio.Future | None = None
        self._last_status: dict | None = None
        self.on_acknowledge = None  # called when the person acknowledges the widening in the tray
        self.on_withdraw = None  # called when the person withdraws the acknowledgement in the tray
        protocol.parse_client_message(protocol.hello(session, client, self.folders, self.pid))  # fail early

    # -- public API -----------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    async def start(self) -> bool:
        """Try to connect now; keep reconnecting in the background. True if connected."""
        ok = await self._connect()
        if self.reconnect and self._keeper is None:
            if not ok:
                self._lost.set()
            self._keeper = asyncio.create_task(self._keep_connected(), name="rootguard-tray-reconnect")
        return ok

    async def publish_status(self, status: dict) -> None:
        """Send the session's status (the ``rootguard/status`` payload); re-sent after reconnects."""
        if not isinstance(status, dict):
            raise TypeError("status must be a dict")
        self._last_status = status
        roots = status.get("roots")
        if isinstance(roots, list) and all(isinstance(r, str) for r in roots):
            self.folders = tuple(roots)
        if self._connected:
            await self._send(protocol.status(status))

    async def set_folders(self, folders: Iterable[str]) -> None:
        """The workspace folders changed: the tray drops this session's grants."""
        self.folders = tuple(folders)
        if self._connected:
            await self._send(protocol.hello(self.session, self.client, self.folders, self.pid))

    async def request_access(
        self,
        tool: str,
        operation: str,
        targets: Iterable[Target | str | dict],
        *,
        rule: str | None = None,
        reason: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        timeout_seconds: float | None = None,
        request_id: str | None = None,
        preview: str | None = None,
    ) -> Decision:
        """Ask the user; one decision for the whole batch of ``targets``.

        ``timeout``: seconds this requester waits at most (the request's deadline).
        ``timeout_seconds``: the requester's ``[approvals] timeout_seconds``, the
        countdown the prompt shows (the tray's own setting when None).
        Returns ``allow_once``, ``allow_session``, ``always``, ``deny``, ``timeout``
        or ``no_approver``; raises ``ValueError`` on a malformed request.
        """
        rid = request_id or uuid.uuid4().hex
        request = protocol.AccessRequest(
            id=rid,
            tool=tool,
            operation=operation,
            targets=tuple(_target(t) for t in targets),
            rule=rule,
            reason=reason,
            deadline=time.time() + timeout,
            timeout_seconds=timeout_seconds,
            preview=preview,
        )
        frame = protocol.request(request)
        try:
            protocol.parse_client_message(frame)
        except ProtocolError as exc:
            raise ValueError(exc.message) from None
        if not self._connected:
            return Decision("no_approver", rid, reason="no Root Guard tray is running")
        if rid in self._waiting:
            raise ValueError(f"request id {rid!r} is already waiting")
        future = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            async with asyncio.timeout(timeout):
                await self._send(frame)
                return await future
        except TimeoutError:
            self._withdraw_now(rid)
            return Decision("timeout", rid, reason=f"no answer within {timeout:g} s")
        except asyncio.CancelledError:
            self._withdraw_now(rid)
            raise
        finally:
            self._waiting.pop(rid, None)
            self.queued.discard(rid)

    async def withdraw(self, request_id: str) -> None:
        """Stop waiting for ``request_id``: it gets ``deny`` here, the tray drops its prompt."""
        self._withdraw_now(request_id)

    async def close(self) -> None:
        """Disconnect for good; requests still waiting get ``deny``."""
        self._closed = True
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        self._drop_connection("the requester closed its tray connection")
        if self._reader_task is not None:
            self._reader_task.cancel()
            self._reader_task = None

    async def __aenter__(self) -> TrayClient:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- connection -----------------------------------------------------------

    async def _connect(self) -> bool:
        if self._closed:
            return False
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(self.socket), self.connect_timeout)
        except (TimeoutError, OSError) as exc:
            log.debug("no tray at %s: %s", self.socket, type(exc).__name__)
            return False
        if not _served_by_us(writer):
            log.warning("the process listening on %s belongs to another user; not using it", self.socket)
            writer.close()
            return False
        self._writer = writer
        self._welcome = asyncio.get_running_loop().create_future()
        self._reader_task = asyncio.create_task(self._read_loop(reader, writer), name="rootguard-tray-reader")
        try:
            writer.write(protocol.encode(protocol.hello(self.session, self.client, self.folders, self.pid)))
            await writer.drain()
            welcome = await asyncio.wait_for(asyncio.shield(self._welcome), self.connect_timeout)
        except (TimeoutError, OSError, ConnectionError, ProtocolError) as exc:
            log.debug("tray handshake failed: %s", type(exc).__name__)
            welcome = None
        if welcome is None:
            self._drop_connection("the tray handshake failed")
            return False
        self.tray_timeout = welcome.timeout_seconds
        self._connected = True
        self._lost.clear()
        if self._last_status is not None:
            await self._send(protocol.status(self._last_status))
        return self._connected

    async def _keep_connected(self) -> None:
        delay = self.backoff[0]
        while not self._closed:
            await self._lost.wait()
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            if await self._connect():
                delay = self.backoff[0]
            else:
                delay = min(delay * 2, self.backoff[1])

    async def _read_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = protocol.FrameReader()
        try:
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    break
                for item in frames.feed(data):
                    self._handle(item)
        except (OSError, ConnectionError):
            pass
        finally:
            if self._writer is writer:
                self._drop_connection("the tray went away before answering")

    def _handle(self, item) -> None:
        if isinstance(item, ProtocolError):
            log.warning("bad frame from the tray: %s", item.message)
            return
        try:
            msg = protocol.parse_server_message(item)
        except ProtocolError as exc:
            log.warning("bad frame from the tray: %s", exc.message)
            if exc.ref:
                self._resolve(Decision("deny", exc.ref, reason=f"unreadable answer from the tray: {exc.message}"))
            return
        if isinstance(msg, protocol.Welcome):
            if self._welcome is not None and not self._welcome.done():
                self._welcome.set_result(msg)
        elif isinstance(msg, protocol.Queued):
            if msg.id in self._waiting:
                self.queued.add(msg.id)
        elif isinstance(msg, Decision):
            self._resolve(msg)
        elif isinstance(msg, protocol.ErrorReply):
            self._on_error(msg)
        elif isinstance(msg, protocol.Acknowledge) and self.on_acknowledge is not None:
            try:
                self.on_acknowledge()
            except Exception:  # noqa: BLE001 - the link stays up whatever the callback does
                log.exception("acknowledging the widening failed")
        elif isinstance(msg, protocol.WithdrawAcknowledgement) and self.on_withdraw is not None:
            try:
                self.on_withdraw()
            except Exception:  # noqa: BLE001 - the link stays up whatever the callback does
                log.exception("withdrawing the acknowledgement failed")

    def _on_error(self, msg: protocol.ErrorReply) -> None:
        if msg.ref and msg.ref in self._waiting:
            self._resolve(Decision("deny", msg.ref, reason=f"the tray refused the request: {msg.message}"))
            return
        log.warning("tray error %s: %s", msg.code, msg.message)
        if msg.code in (protocol.UNSUPPORTED_VERSION, protocol.REFUSED) and self._welcome and not self._welcome.done():
            self._welcome.set_result(None)

    def _resolve(self, decision: Decision) -> None:
        future = self._waiting.get(decision.id) if decision.id else None
        if future is None or future.done():
            self.stray_decisions += 1
            return
        future.set_result(decision)

    async def _send(self, frame: dict) -> None:
        writer = self._writer
        if writer is None:
            self._drop_connection("the tray went away before answering")
            return
        try:
            writer.write(protocol.encode(frame))
            await writer.drain()
        except (OSError, ConnectionError):
            self._drop_connection("the tray went away before answering")

    def _withdraw_now(self, request_id: str) -> None:
        future = self._waiting.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(Decision("deny", request_id, reason="withdrawn by the requester"))
        if self._writer is not None and self._connected:
            try:
                self._writer.write(protocol.encode(protocol.withdraw(request_id)))
            except (OSError, ConnectionError, RuntimeError):
                pass

    def _drop_connection(self, reason: str) -> None:
        """Closed or broken connection: every waiting request is denied now."""
        writer, self._writer = self._writer, None
        self._connected = False
        if writer is not None:
            writer.close()
        if self._welcome is not None and not self._welcome.done():
            self._welcome.set_result(None)
        for rid, future in list(self._waiting.items()):
            if not future.done():
                future.set_result(Decision("deny", rid, reason=reason))
        if not self._closed:
            self._lost.set()


def _served_by_us(writer: asyncio.StreamWriter) -> bool:
    """The tray must run as this user: a socket planted by someone else gets no requests."""
    sock = writer.get_extra_info("socket")
    try:
        uid = peer_uid(sock) if sock is not None else None
    except OSError:
        return False
    return uid is None or uid == os.getuid()


def _target(value: Target | str | dict) -> Target:
    if isinstance(value, Target):
        return value
    if isinstance(value, str):
        return Target(value)
    if isinstance(value, dict):
        unknown = set(value) - {"path", "relative", "root", "need"}
        if unknown:
            raise ValueError(f"unknown target field(s): {', '.join(sorted(unknown))}")
        path = value.get("path")
        if not isinstance(path, str):
            raise ValueError("a target dict needs a 'path' string")
        return Target(path, value.get("relative"), value.get("root"), value.get("need"))
    raise ValueError(f"a target is a path, a dict or a Target, not {type(value).__name__}")
