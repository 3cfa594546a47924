"""The tray's end of the socket: QLocalServer, event-driven, never blocking the GUI thread.

Each connection has its own frame buffer; a malformed, oversized or unknown
frame gets an ``error`` reply and the connection goes on; one slow or hostile
client never stalls the others. On Linux the peer's uid (``SO_PEERCRED``) must be
ours. Requests go to the ``ApprovalQueue``; the GUI (``app.py``) answers them.
Only QtCore and QtNetwork are used here, so the broker also runs headless.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import socket
import stat

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from lsp_bridge.approvals import protocol
from lsp_bridge.approvals.protocol import ProtocolError
from lsp_bridge.approvals.runtime import ensure_private_dir, lock_path, peer_uid
from tray.hooks import Hook
from tray.queue import Answer, ApprovalQueue, DecisionRecord, Pending, QueueError, Requester
from tray.sessions import SessionRegistry

log = logging.getLogger("rootguard.tray.broker")

MAX_WRITE_BACKLOG = 8 << 20  # a client that stops reading is dropped
READ_BUFFER = 1 << 18


class BrokerError(RuntimeError):
    """The broker cannot listen (unsafe directory, path in use by something else)."""


def peer_uid_of_fd(fd: int) -> int | None:
    """The uid of the process at the other end of a unix socket descriptor (Linux), else None."""
    peer = socket.socket(fileno=os.dup(fd))
    try:
        return peer_uid(peer)
    finally:
        peer.close()


def acquire_single_instance(sock_path: str) -> int | None:
    """Lock ``<socket>.lock``; the fd to keep open, or None if another tray holds it."""
    ensure_private_dir(os.path.dirname(sock_path))
    fd = os.open(lock_path(sock_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def bind_socket(sock_path: str) -> tuple[int, tuple[int, int]]:
    """A listening unix socket at ``sock_path``, mode 0600 from birth; (fd, (dev, ino)).

    A stale socket file is replaced (call this while holding the instance lock);
    anything else at that path is refused, never deleted.
    """
    ensure_private_dir(os.path.dirname(sock_path))
    try:
        info = os.lstat(sock_path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(info.st_mode):
            raise BrokerError(f"{sock_path}: exists and is not a socket; not replacing it")
        os.unlink(sock_path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        server.bind(sock_path)
    except OSError as exc:
        server.close()
        raise BrokerError(f"{sock_path}: cannot listen ({exc.strerror})") from None
    finally:
        os.umask(old_mask)
    server.listen(128)
    info = os.stat(sock_path)
    return server.detach(), (info.st_dev, info.st_ino)


class Connection:
    """One client: its socket, its frame buffer, and its hello once received."""

    def __init__(self, conn_id: int, sock: QLocalSocket):
        self.id = conn_id
        self.socket = sock
        self.frames = protocol.FrameReader()
        self.hello: protocol.Hello | None = None
        self.closing = False


class Broker(QObject):
    """Routes frames between clients and the approval queue."""

    def __init__(
        self,
        sock_path: str,
        *,
        queue: ApprovalQueue | None = None,
        registry: SessionRegistry | None = None,
        auto_answer: str | None = None,
        history=None,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self.sessionsChanged = Hook()
        self.queueChanged = Hook()
        self.widened = Hook()  # called with the connection id whose union just widened
        if auto_answer is not None and auto_answer not in ("allow_once", "deny"):
            raise ValueError("auto_answer must be allow_once or deny")
        self.path = sock_path
        self.queue = queue or ApprovalQueue()
        self.registry = registry or SessionRegistry()
        self.auto_answer = auto_answer
        self.history = history  # tray.history.History: what survives a restart
        if history is not None:
            history.load_into(self.queue)
            self.queue.on_record = history.append
        self._server = QLocalServer(self)
        self._server.newConnection.connect(self._accept)
        self._conns: dict[int, Connection] = {}
        self._ids = itertools.count(1)
        self._identity: tuple[int, int] | None = None
        self._expiry = QTimer(self)
        self._expiry.setSingleShot(True)
        self._expiry.setTimerType(Qt.TimerType.PreciseTimer)
        self._expiry.timeout.connect(self.check_expiry)
        self._expiry_armed = False
        self.stopped = False

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        fd, self._identity = bind_socket(self.path)
        if not self._server.listen(fd):
            os.close(fd)
            raise BrokerError(f"{self.path}: cannot listen ({self._server.errorString()})")

    def stop(self, reason: str = "the tray quit") -> None:
        """Deny every pending request now, close every connection, remove the socket."""
        if self.stopped:
            return
        self.stopped = True
        self._send_answers(self.queue.deny_all(reason))
        for conn in list(self._conns.values()):
            conn.closing = True
            conn.socket.flush()
            conn.socket.disconnectFromServer()
        self._server.close()
        self._remove_socket_file()

    def _remove_socket_file(self) -> None:
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return
        if self._identity == (info.st_dev, info.st_ino):
            os.unlink(self.path)

    # -- answers from the GUI -----------------------------------------------

    def answer(self, pending: Pending, answer: str, rules: tuple[str, ...] = ()) -> None:
        self._send_answers(self.queue.answer(pending, answer, rules))
        self._changed_queue()

    def withdraw_acknowledgement(self, conn_id: int) -> bool:
        """Tell the session the person withdrew its acknowledgement (it warns again)."""
        conn = self._conns.get(conn_id)
        info = self.registry.get(conn_id)
        if info is not None:
            union = tuple(p for p in (info.status or {}).get("union", []) if isinstance(p, str))
            self.queue.note(DecisionRecord(self.queue.wall(), info.label, "—", "widening", union, "withdrawn", 1,
                                           "acknowledgement withdrawn in the tray"))
        if conn is None or conn.hello is None:
            self.queueChanged.emit()
            return False
        self._send(conn, protocol.withdraw_acknowledgement())
        self.queueChanged.emit()
        return True

    def acknowledge(self, conn_id: int) -> bool:
        """Tell the session the person acknowledged its widening (it records the union)."""
        conn = self._conns.get(conn_id)
        info = self.registry.get(conn_id)
        self.registry.acknowledge(conn_id)
        if info is not None:
            union = tuple(p for p in (info.status or {}).get("union", []) if isinstance(p, str))
            self.queue.note(DecisionRecord(self.queue.wall(), info.label, "—", "widening", union, "acknowledged", 1,
                                           "acknowledged in the tray"))
        if conn is None or conn.hello is None:
            self.queueChanged.emit()
            return False
        self._send(conn, protocol.acknowledge())
        self.sessionsChanged.emit()
        self.queueChanged.emit()
        return True

    def dismiss_missed(self, record) -> None:
        self.queue.dismiss_missed(record)
        if self.history is not None:
            self.history.dismissed(record)

    def pause(self, pending: Pending) -> None:
        self.queue.pause(pending)
        self._schedule_expiry()

    # -- connections ----------------------------------------------------------

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            sock = self._server.nextPendingConnection()
            uid = peer_uid_of_fd(int(sock.socketDescriptor()))
            if uid is not None and uid != os.getuid():
                log.warning("refused a connection from uid %s", uid)
                sock.write(protocol.encode(protocol.error(protocol.REFUSED, "this tray serves another user")))
                sock.flush()
                sock.disconnectFromServer()
                sock.disconnected.connect(sock.deleteLater)
                continue
            conn = Connection(next(self._ids), sock)
            sock.setReadBufferSize(READ_BUFFER)
            self._conns[conn.id] = conn
            sock.readyRead.connect(lambda c=conn: self._read(c))
            sock.disconnected.connect(lambda c=conn: self._closed(c))

    def _read(self, conn: Connection) -> None:
        data = bytes(conn.socket.readAll().data())
        for item in conn.frames.feed(data):
            if conn.closing:
                return
            if isinstance(item, ProtocolError):
                self._send(conn, item.to_frame())
                continue
            try:
                self._dispatch(conn, item)
            except ProtocolError as exc:
                self._send(conn, exc.to_frame())
            except Exception:  # noqa: BLE001 - one bad frame must never take the tray down
                log.exception("internal error on a frame")
                self._send(conn, protocol.error(protocol.INTERNAL, "the tray failed on this frame", protocol.frame_ref(item)))

    def _closed(self, conn: Connection) -> None:
        if self._conns.pop(conn.id, None) is None:
            return
        conn.socket.deleteLater()
        dropped = self.queue.end_session(conn.id)
        self.registry.remove(conn.id)
        if dropped:
            log.info("session closed with %d request(s) waiting", dropped)
        self.sessionsChanged.emit()
        self._changed_queue()

    def _send(self, conn: Connection, frame: dict) -> None:
        if conn.closing:
            return
        conn.socket.write(protocol.encode(frame))
        if conn.socket.bytesToWrite() > MAX_WRITE_BACKLOG:
            log.warning("dropping a client that does not read its replies")
            conn.closing = True
            conn.socket.abort()

    def _send_answers(self, answers: list[Answer]) -> None:
        for a in answers:
            conn = self._conns.get(a.conn)
            if conn is not None:
                self._send(conn, protocol.decision(a.request_id, a.answer, a.reason, a.rules))

    # -- messages -----------------------------------------------------------

    def _dispatch(self, conn: Connection, frame: dict) -> None:
        msg = protocol.parse_client_message(frame)
        if isinstance(msg, protocol.Hello):
            self._on_hello(conn, msg)
        elif conn.hello is None:
            raise ProtocolError(protocol.HELLO_FIRST, "send hello first", protocol.frame_ref(frame))
        elif isinstance(msg, protocol.Status):
            self._on_status(conn, msg.status)
        elif isinstance(msg, protocol.AccessRequest):
            self._on_request(conn, msg)
        elif isinstance(msg, protocol.Withdraw):
            if self.queue.withdraw(conn.id, msg.id):
                self._changed_queue()

    def _on_hello(self, conn: Connection, msg: protocol.Hello) -> None:
        conn.hello = msg
        self.registry.hello(conn.id, msg)
        self.queue.set_folders(conn.id, msg.folders)
        self._send(conn, protocol.welcome(os.getpid(), self.queue.timeout_seconds))
        self.sessionsChanged.emit()

    def _on_status(self, conn: Connection, payload: dict) -> None:
        change = self.registry.update_status(conn.id, payload)
        if change.folders_changed:
            info = self.registry.get(conn.id)
            assert info is not None  # update_status registered it
            self.queue.set_folders(conn.id, info.roots)
        self.sessionsChanged.emit()
        if change.widened_now or change.measured:
            self.widened.emit(conn.id)

    def _on_request(self, conn: Connection, request: protocol.AccessRequest) -> None:
        info = self.registry.get(conn.id)
        assert conn.hello is not None  # requests are dispatched only after hello
        who = Requester(conn.id, conn.hello.session, conn.hello.client, conn.hello.pid, info.window if info else "")
        try:
            result = self.queue.submit(who, request)
        except QueueError as exc:
            raise ProtocolError(exc.code, str(exc), request.id) from None
        self._send_answers(result.answers)
        if result.pending is not None and self.auto_answer is not None:
            answers = self.queue.answer(result.pending, self.auto_answer, reason="answered automatically (test mode)")
            self._send_answers(answers)
        elif result.pending is not None:
            self._send(conn, protocol.queued(request.id, self.queue.waiting_count()))
        self._changed_queue()

    # -- countdowns ---------------------------------------------------------

    def check_expiry(self) -> None:
        """Answer ``timeout`` to what ran out of time (the timer calls this)."""
        answers = self.queue.expire()
        self._send_answers(answers)
        self._changed_queue()

    def _changed_queue(self) -> None:
        self._schedule_expiry()
        self.queueChanged.emit()

    def _schedule_expiry(self) -> None:
        left = self.queue.next_expiry()
        if left is None:
            if self._expiry_armed:
                self._expiry.stop()
                self._expiry_armed = False
        else:
            self._expiry.start(max(0, int(left * 1000) + 1))
            self._expiry_armed = True
