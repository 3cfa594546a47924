"""The approval queue, as plain data: no Qt, no sockets, an injectable clock.

- Identical pending requests (same session, tool, operation and paths) merge
  into one entry with a counter; one answer answers them all.
- "Allow for this session" grants live here, per connection, in the approval
  service's store (``SessionGrants``, keyed by (need, canonical path), as the
  requesters keep theirs), and are dropped when the session ends or its
  workspace folders change.
- Each entry has a countdown (``[approvals] timeout_seconds``) that pauses on
  interaction; expiry answers ``timeout`` once, stores nothing, and leaves a
  missed-request record. The requester's own deadline is a hard limit that a
  paused countdown cannot extend.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from lsp_bridge.approvals.protocol import DEFAULT_NEED, MAX_PENDING_PER_CLIENT, AccessRequest
from lsp_bridge.approvals.service import SessionGrants
from lsp_bridge.core.settings import DEFAULT_APPROVAL_TIMEOUT as DEFAULT_TIMEOUT

RECENT_LIMIT = 50
MISSED_LIMIT = 200


class QueueError(ValueError):
    """A request the queue refuses (duplicate id, too many pending)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Requester:
    """Who asks: one connection (one editor window or MCP server)."""

    conn: int
    session: str
    client: str
    pid: int | None = None
    window: str = ""  # what the user recognises, e.g. the first folder's name

    @property
    def label(self) -> str:
        where = f" — {self.window}" if self.window else ""
        return f"{self.client}{where}"


@dataclass
class Countdown:
    """Seconds left before an unanswered prompt is denied; pauses for good on interaction."""

    duration: float
    started: float
    paused_at: float | None = None

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    def pause(self, now: float) -> None:
        if self.paused_at is None:
            self.paused_at = now

    def remaining(self, now: float) -> float:
        elapsed = (self.paused_at if self.paused_at is not None else now) - self.started
        return max(0.0, self.duration - elapsed)

    def expired(self, now: float) -> bool:
        return not self.paused and self.remaining(now) <= 0.0


@dataclass(eq=False)
class Waiting:
    """One request inside a pending entry."""

    request: AccessRequest
    requester: Requester
    hard_deadline: float  # on the queue's monotonic clock


@dataclass(eq=False)
class Pending:
    """One prompt: one or more identical requests."""

    serial: int
    key: tuple
    waiting: list[Waiting]
    countdown: Countdown

    @property
    def request(self) -> AccessRequest:
        return self.waiting[0].request

    @property
    def requester(self) -> Requester:
        return self.waiting[0].requester

    @property
    def count(self) -> int:
        return len(self.waiting)

    @property
    def can_always(self) -> bool:
        """'Always' needs to know which policy each target needs."""
        return all(t.need for t in self.request.targets)


@dataclass(frozen=True)
class Answer:
    """A decision frame to send to one connection."""

    conn: int
    request_id: str
    answer: str
    reason: str = ""
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class DecisionRecord:
    when: float  # wall clock
    who: str
    tool: str
    operation: str
    paths: tuple[str, ...]
    answer: str
    count: int = 1
    reason: str = ""


@dataclass(frozen=True)
class MissedRecord:
    when: float  # wall clock
    who: str
    tool: str
    operation: str
    paths: tuple[str, ...]
    rule: str | None
    reason: str  # the requester's reason
    why: str  # why it was missed
    count: int = 1


@dataclass
class Submitted:
    """What ``submit`` did: answered at once (session grant, expired) or queued."""

    answers: list[Answer] = field(default_factory=list)
    pending: Pending | None = None
    merged: bool = False


def merge_key(requester: Requester, request: AccessRequest) -> tuple:
    return (requester.conn, request.tool, request.operation, request.paths)


class ApprovalQueue:
    """Pending approvals, session grants, recent decisions and missed requests."""

    def __init__(
        self,
        timeout_seconds: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        self.timeout_seconds = timeout_seconds
        self.clock = clock
        self.wall = wall
        self._pending: list[Pending] = []
        self._serials = itertools.count(1)
        self._grants: dict[int, SessionGrants] = {}
        self._folders: dict[int, frozenset[str]] = {}
        self.recent: deque[DecisionRecord] = deque(maxlen=RECENT_LIMIT)
        self.missed: deque[MissedRecord] = deque(maxlen=MISSED_LIMIT)
        self.on_record: Callable[[str, DecisionRecord | MissedRecord], None] | None = None  # (kind, record)

    # -- queries ------------------------------------------------------------

    @property
    def pending(self) -> list[Pending]:
        return list(self._pending)

    @property
    def head(self) -> Pending | None:
        return self._pending[0] if self._pending else None

    def waiting_count(self) -> int:
        return sum(p.count for p in self._pending)

    def grants(self, conn: int) -> frozenset[tuple[str, str]]:
        """(need, path) pairs allowed for this session."""
        return frozenset(self._grants.get(conn, ()))

    def find(self, serial: int) -> Pending | None:
        return next((p for p in self._pending if p.serial == serial), None)

    # -- requests -----------------------------------------------------------

    def submit(self, requester: Requester, request: AccessRequest) -> Submitted:
        """Answer from a session grant, merge into an identical prompt, or queue."""
        if self._has_id(requester.conn, request.id):
            raise QueueError("duplicate-id", f"request id {request.id!r} is already pending")
        if self._count_for(requester.conn) >= MAX_PENDING_PER_CLIENT:
            raise QueueError("too-many-pending", f"more than {MAX_PENDING_PER_CLIENT} pending requests")
        if self._granted(requester.conn, request):
            answer = Answer(requester.conn, request.id, "allow_session", "allowed for this session earlier")
            self._record(requester, request, "allow_session", 1, answer.reason)
            return Submitted(answers=[answer])
        now = self.clock()
        left = request.deadline - self.wall()
        if left <= 0:
            return Submitted(answers=[Answer(requester.conn, request.id, "timeout", "the deadline had passed on arrival")])
        item = Waiting(request, requester, now + left)
        key = merge_key(requester, request)
        for pending in self._pending:
            if pending.key == key:
                pending.waiting.append(item)
                return Submitted(pending=pending, merged=True)
        duration = min(request.timeout_seconds or self.timeout_seconds, left)
        pending = Pending(next(self._serials), key, [item], Countdown(duration, now))
        self._pending.append(pending)
        return Submitted(pending=pending)

    def answer(self, pending: Pending, answer: str, rules: tuple[str, ...] = (), reason: str = "") -> list[Answer]:
        """The user's answer to a prompt: one decision per merged request."""
        if pending not in self._pending:
            return []
        self._pending.remove(pending)
        if answer == "allow_session":
            self._grants.setdefault(pending.requester.conn, SessionGrants()).add(grant_keys(pending.request))
        reason = reason or _ANSWER_REASONS.get(answer, "")
        self._record(pending.requester, pending.request, answer, pending.count, reason)
        return [Answer(w.requester.conn, w.request.id, answer, reason, rules) for w in pending.waiting]

    def pause(self, pending: Pending) -> None:
        pending.countdown.pause(self.clock())

    def withdraw(self, conn: int, request_id: str) -> bool:
        """The requester no longer waits for ``request_id``."""
        for pending in self._pending:
            for item in pending.waiting:
                if item.requester.conn == conn and item.request.id == request_id:
                    pending.waiting.remove(item)
                    if not pending.waiting:
                        self._pending.remove(pending)
                    return True
        return False

    def expire(self) -> list[Answer]:
        """Deny what ran out of time, once, and keep a missed-request record."""
        now = self.clock()
        answers: list[Answer] = []
        for pending in list(self._pending):
            gone = [w for w in pending.waiting if w.hard_deadline <= now]
            for item in gone:
                pending.waiting.remove(item)
                answers.append(Answer(item.requester.conn, item.request.id, "timeout", "the requester stopped waiting"))
            if gone:
                self._miss(gone[0], "the requester stopped waiting", len(gone))
            if not pending.waiting:
                self._pending.remove(pending)
            elif pending.countdown.expired(now):
                self._pending.remove(pending)
                why = f"no answer within {pending.countdown.duration:g} s"
                self._miss(pending.waiting[0], why, pending.count)
                answers += [Answer(w.requester.conn, w.request.id, "timeout", why) for w in pending.waiting]
        return answers

    def next_expiry(self) -> float | None:
        """Seconds until the next countdown or hard deadline, or None when idle."""
        now = self.clock()
        times = []
        for pending in self._pending:
            if not pending.countdown.paused:
                times.append(pending.countdown.remaining(now))
            times += [max(0.0, w.hard_deadline - now) for w in pending.waiting]
        return min(times) if times else None

    def deny_all(self, reason: str) -> list[Answer]:
        """Deny every pending request (the tray is quitting)."""
        answers = [Answer(w.requester.conn, w.request.id, "deny", reason) for p in self._pending for w in p.waiting]
        self._pending.clear()
        return answers

    # -- sessions -----------------------------------------------------------

    def set_folders(self, conn: int, folders) -> bool:
        """Record a session's folders; a change drops its session grants. True if dropped."""
        new = frozenset(folders)
        old = self._folders.get(conn)
        self._folders[conn] = new
        if old is not None and old != new and len(self._grants.get(conn, ())):
            self._grants.pop(conn, None)
            return True
        return False

    def end_session(self, conn: int) -> int:
        """Forget a closed connection: its grants and its waiting requests. Returns how many."""
        self._grants.pop(conn, None)
        self._folders.pop(conn, None)
        dropped = 0
        for pending in list(self._pending):
            keep = [w for w in pending.waiting if w.requester.conn != conn]
            dropped += pending.count - len(keep)
            pending.waiting[:] = keep
            if not keep:
                self._pending.remove(pending)
        return dropped

    def dismiss_missed(self, record: MissedRecord) -> None:
        try:
            self.missed.remove(record)
        except ValueError:
            pass

    # -- helpers ------------------------------------------------------------

    def _granted(self, conn: int, request: AccessRequest) -> bool:
        grants = self._grants.get(conn)
        return grants is not None and grants.covers(grant_keys(request))

    def _has_id(self, conn: int, request_id: str) -> bool:
        return any(w.requester.conn == conn and w.request.id == request_id for p in self._pending for w in p.waiting)

    def _count_for(self, conn: int) -> int:
        return sum(1 for p in self._pending for w in p.waiting if w.requester.conn == conn)

    def note(self, record: DecisionRecord) -> None:
        """A record from outside the queue (an acknowledged widening)."""
        self.recent.appendleft(record)
        if self.on_record is not None:
            self.on_record("decision", record)

    def _record(self, requester: Requester, request: AccessRequest, answer: str, count: int, reason: str) -> None:
        self.note(
            DecisionRecord(self.wall(), requester.label, request.tool, request.operation, request.paths, answer, count, reason)
        )

    def _miss(self, item: Waiting, why: str, count: int) -> None:
        req = item.request
        record = MissedRecord(
            self.wall(), item.requester.label, req.tool, req.operation, req.paths, req.rule, req.reason, why, count
        )
        self.missed.appendleft(record)
        if self.on_record is not None:
            self.on_record("missed", record)
        self._record(item.requester, req, "timeout", count, why)


def grant_keys(request: AccessRequest) -> set[tuple[str, str]]:
    """What an "allow for this session" answer to ``request`` covers: (need, path) per target.

    A target without a need (a rename that did not say which end needs what) is
    keyed by the operation, so it only ever matches the same unspecified request.
    """
    return {(t.need or DEFAULT_NEED.get(request.operation) or request.operation, t.path) for t in request.targets}


_ANSWER_REASONS = {
    "allow_once": "allowed once by the user",
    "allow_session": "allowed for this session by the user",
    "always": "always allowed by the user (rule written to the user configuration)",
    "deny": "denied by the user",
}
