"""The tray protocol, version 1: newline-delimited JSON frames, validated.

Pure data handling (no Qt, no sockets), shared by the tray (``broker.py``) and
its clients (``client.py``). ``docs/tray-protocol.md`` is the specification;
keep the two in step.

Every frame is one JSON object on one line (UTF-8, at most ``MAX_FRAME`` bytes
including the newline) with a ``type`` field. Anything else earns an ``error``
frame; the connection stays usable.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard, overload

from lsp_bridge.approvals.runtime import socket_path  # noqa: F401  (re-exported: both sides use it)

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20  # bytes, newline included
MAX_TARGETS = 1000
MAX_TEXT = 4096  # tool, reason, rule, names
MAX_PREVIEW = 64 * 1024  # a write's diff, shown in the prompt
MAX_PENDING_PER_CLIENT = 256

OPERATIONS = ("read", "write", "delete", "rename", "metadata")
NEEDS = ("read", "write", "delete")
ANSWERS = ("allow_once", "allow_session", "always", "deny", "timeout")
CLIENT_ANSWERS = ANSWERS + ("no_approver",)
ALLOWING = ("allow_once", "allow_session", "always")

# error codes
MALFORMED = "malformed"
TOO_LARGE = "too-large"
UNKNOWN_TYPE = "unknown-type"
INVALID = "invalid"
HELLO_FIRST = "hello-first"
UNSUPPORTED_VERSION = "unsupported-version"
REFUSED = "refused"
TOO_MANY_PENDING = "too-many-pending"
DUPLICATE_ID = "duplicate-id"
INTERNAL = "internal"

# The policy each operation needs when the target does not say (rename needs two).
DEFAULT_NEED = {"read": "read", "write": "write", "metadata": "write", "delete": "delete"}


class ProtocolError(Exception):
    """A frame the other side cannot accept; becomes an ``error`` frame."""

    def __init__(self, code: str, message: str, ref: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.ref = ref

    def to_frame(self) -> dict:
        return error(self.code, self.message, self.ref)


# ---------------------------------------------------------------------------
# Framing


def encode(message: dict) -> bytes:
    """One frame: compact JSON and a newline. Raises ``ProtocolError`` if too large."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    if len(data) + 1 > MAX_FRAME:
        raise ProtocolError(TOO_LARGE, f"frame of {len(data) + 1} bytes exceeds {MAX_FRAME}")
    return data + b"\n"


def decode(line: bytes) -> dict:
    """Parse one frame's bytes (without its newline) into a JSON object."""
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(MALFORMED, f"not a JSON object: {type(exc).__name__}") from None
    except RecursionError:  # arrays or objects nested past the parser's depth: the frame, not the peer, fails
        raise ProtocolError(MALFORMED, "not a JSON object: nested too deep") from None
    if not isinstance(value, dict):
        raise ProtocolError(MALFORMED, "a frame must be a JSON object")
    return value


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


class FrameReader:
    """Splits a byte stream into frames; survives garbage and oversized frames.

    ``feed`` returns, in order, decoded ``dict`` frames and ``ProtocolError``
    values for frames that were malformed or too large. An oversized frame is
    reported once and skipped up to its newline.
    """

    def __init__(self, max_frame: int = MAX_FRAME):
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[dict | ProtocolError]:
        out: list[dict | ProtocolError] = []
        self._buffer += data
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                if len(self._buffer) >= self.max_frame:
                    if not self._skipping:
                        out.append(_too_large())
                    self._skipping = True
                    self._buffer.clear()
                return out
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            if self._skipping:
                self._skipping = False
                continue
            if newline + 1 > self.max_frame:
                out.append(_too_large())
                continue
            if not line.strip():
                continue
            try:
                out.append(decode(line))
            except ProtocolError as exc:
                out.append(exc)

    @property
    def buffered(self) -> int:
        return len(self._buffer)


def _too_large() -> ProtocolError:
    return ProtocolError(TOO_LARGE, f"frame exceeds {MAX_FRAME} bytes; skipped")


# ---------------------------------------------------------------------------
# Messages


@dataclass(frozen=True)
class Hello:
    session: str
    pid: int | None
    client: str
    folders: tuple[str, ...]
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True)
class Status:
    status: dict


@dataclass(frozen=True)
class Target:
    """One path of an access request (a batch has several)."""

    path: str  # canonical, absolute
    relative: str | None = None  # relative to ``root``
    root: str | None = None  # the root that selected it
    need: str | None = None  # read | write | delete; None = from the operation

    def to_json(self) -> dict:
        return {"path": self.path, "relative": self.relative, "root": self.root, "need": self.need}


@dataclass(frozen=True)
class AccessRequest:
    id: str
    tool: str
    operation: str
    targets: tuple[Target, ...]
    rule: str | None
    reason: str
    deadline: float  # seconds since the epoch: the requester stops waiting then
    timeout_seconds: float | None = None  # the requester's [approvals] timeout_seconds
    preview: str | None = None  # what a write changes: rule changes in words, then a unified diff

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(t.path for t in self.targets)

    def to_json(self) -> dict:
        return request(self)


@dataclass(frozen=True)
class Withdraw:
    id: str


@dataclass(frozen=True)
class Decision:
    """An answer to one access request, as the tray sends it and the client returns it."""

    answer: str
    id: str | None = None
    rules: tuple[str, ...] = ()
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.answer in ALLOWING


@dataclass(frozen=True)
class Acknowledge:
    """The person acknowledged this session's widening in the tray."""


@dataclass(frozen=True)
class WithdrawAcknowledgement:
    """The person withdrew this session's acknowledgement in the tray (it warns again)."""


@dataclass(frozen=True)
class Welcome:
    protocol: int
    tray_pid: int | None
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class Queued:
    id: str
    pending: int


@dataclass(frozen=True)
class ErrorReply:
    code: str
    message: str
    ref: str | None = None


ClientMessage = Hello | Status | AccessRequest | Withdraw
ServerMessage = Welcome | Queued | Decision | ErrorReply | Acknowledge | WithdrawAcknowledgement


# ---------------------------------------------------------------------------
# Constructors (dicts ready for ``encode``)


def hello(session: str, client: str, folders, pid: int | None = None) -> dict:
    return {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "session": session,
        "pid": os.getpid() if pid is None else pid,
        "client": client,
        "folders": list(folders),
    }


def status(payload: dict) -> dict:
    return {"type": "status", "status": payload}


def request(req: AccessRequest) -> dict:
    frame = {
        "type": "request",
        "id": req.id,
        "tool": req.tool,
        "operation": req.operation,
        "targets": [t.to_json() for t in req.targets],
        "rule": req.rule,
        "reason": req.reason,
        "deadline": req.deadline,
    }
    if req.timeout_seconds is not None:
        frame["timeout_seconds"] = req.timeout_seconds
    if req.preview is not None:
        frame["preview"] = req.preview
    return frame


def withdraw(request_id: str) -> dict:
    return {"type": "withdraw", "id": request_id}


def acknowledge() -> dict:
    return {"type": "acknowledge"}


def withdraw_acknowledgement() -> dict:
    return {"type": "withdraw_acknowledgement"}


def welcome(tray_pid: int, timeout_seconds: float | None) -> dict:
    return {"type": "welcome", "protocol": PROTOCOL_VERSION, "tray_pid": tray_pid, "timeout_seconds": timeout_seconds}


def queued(request_id: str, pending: int) -> dict:
    return {"type": "queued", "id": request_id, "pending": pending}


def decision(request_id: str, answer: str, reason: str = "", rules=()) -> dict:
    if answer not in ANSWERS:
        raise ValueError(f"unknown answer {answer!r}")
    return {"type": "decision", "id": request_id, "answer": answer, "rules": list(rules), "reason": reason}


def error(code: str, message: str, ref: str | None = None) -> dict:
    return {"type": "error", "code": code, "message": message, "ref": ref}


# ---------------------------------------------------------------------------
# Validation


def parse_client_message(frame: dict) -> ClientMessage:
    """Validate a frame a client sent. Raises ``ProtocolError`` naming the field."""
    kind = frame.get("type")
    parser = _CLIENT_PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise ProtocolError(UNKNOWN_TYPE, f"unknown frame type {_shown(kind)}", frame_ref(frame))
    return parser(frame)


def parse_server_message(frame: dict) -> ServerMessage:
    """Validate a frame the tray sent. Raises ``ProtocolError`` naming the field."""
    kind = frame.get("type")
    parser = _SERVER_PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise ProtocolError(UNKNOWN_TYPE, f"unknown frame type {_shown(kind)}", frame_ref(frame))
    return parser(frame)


def _parse_hello(f: dict) -> Hello:
    version = f.get("protocol")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ProtocolError(INVALID, "hello.protocol must be an integer")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(UNSUPPORTED_VERSION, f"protocol {version} is not supported (this tray speaks {PROTOCOL_VERSION})")
    pid = f.get("pid")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool) or pid < 0):
        raise ProtocolError(INVALID, "hello.pid must be a non-negative integer or null")
    return Hello(
        session=_text(f, "session", "hello", required=True, empty=False),
        pid=pid,
        client=_text(f, "client", "hello", required=False) or "unknown client",
        folders=_abs_paths(f.get("folders", []), "hello.folders"),
        protocol=version,
    )


def _parse_status(f: dict) -> Status:
    payload = f.get("status")
    if not isinstance(payload, dict):
        raise ProtocolError(INVALID, "status.status must be an object")
    return Status(payload)


def _parse_request(f: dict) -> AccessRequest:
    rid = _text(f, "id", "request", required=True, empty=False)
    try:
        operation = f.get("operation")
        if operation not in OPERATIONS:
            raise ProtocolError(INVALID, f"request.operation must be one of {', '.join(OPERATIONS)}")
        raw_targets = f.get("targets")
        if not isinstance(raw_targets, list) or not raw_targets:
            raise ProtocolError(INVALID, "request.targets must be a non-empty list")
        if len(raw_targets) > MAX_TARGETS:
            raise ProtocolError(INVALID, f"request.targets has more than {MAX_TARGETS} entries")
        targets = tuple(_target(t, i, operation) for i, t in enumerate(raw_targets))
        deadline = f.get("deadline")
        if not _finite_number(deadline):
            raise ProtocolError(INVALID, "request.deadline must be a number (seconds since the epoch)")
        timeout = f.get("timeout_seconds")
        if timeout is not None and (not _finite_number(timeout) or timeout <= 0):
            raise ProtocolError(INVALID, "request.timeout_seconds must be a positive number or absent")
        preview = f.get("preview")
        if preview is not None and (not isinstance(preview, str) or len(preview) > MAX_PREVIEW):
            raise ProtocolError(INVALID, f"request.preview must be a string of at most {MAX_PREVIEW} characters")
        return AccessRequest(
            id=rid,
            tool=_text(f, "tool", "request", required=True, empty=False),
            operation=operation,
            targets=targets,
            rule=_text(f, "rule", "request", required=False),
            reason=_text(f, "reason", "request", required=False) or "",
            deadline=float(deadline),
            timeout_seconds=float(timeout) if timeout is not None else None,
            preview=preview,
        )
    except ProtocolError as exc:
        exc.ref = rid
        raise


def _target(raw, index: int, operation: str) -> Target:
    where = f"request.targets[{index}]"
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict):
        raise ProtocolError(INVALID, f"{where} must be an object or a path")
    path = raw.get("path")
    if not isinstance(path, str) or not _is_abs(path):
        raise ProtocolError(INVALID, f"{where}.path must be an absolute path")
    root = raw.get("root")
    if root is not None and (not isinstance(root, str) or not _is_abs(root)):
        raise ProtocolError(INVALID, f"{where}.root must be an absolute path or null")
    relative = raw.get("relative")
    if relative is not None and not isinstance(relative, str):
        raise ProtocolError(INVALID, f"{where}.relative must be a string or null")
    if relative is None and root is not None:
        relative = _relative(path, root)
    need = raw.get("need")
    if need is None:
        need = DEFAULT_NEED.get(operation)
    elif need not in NEEDS:
        raise ProtocolError(INVALID, f"{where}.need must be one of {', '.join(NEEDS)} or null")
    return Target(path=path, relative=relative, root=root, need=need)


def _relative(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when inside it (component-wise), else None."""
    root = root.rstrip("/") or "/"
    if path == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix):] if path.startswith(prefix) else None


def _parse_withdraw(f: dict) -> Withdraw:
    return Withdraw(_text(f, "id", "withdraw", required=True, empty=False))


def _parse_welcome(f: dict) -> Welcome:
    version = f.get("protocol")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(UNSUPPORTED_VERSION, f"the tray speaks protocol {_shown(version)}")
    timeout = f.get("timeout_seconds")
    return Welcome(version, f.get("tray_pid") if isinstance(f.get("tray_pid"), int) else None,
                   float(timeout) if _finite_number(timeout) else None)


def _parse_queued(f: dict) -> Queued:
    pending = f.get("pending")
    return Queued(_text(f, "id", "queued", required=True, empty=False), pending if isinstance(pending, int) else 0)


def _parse_decision(f: dict) -> Decision:
    rid = _text(f, "id", "decision", required=True, empty=False)
    answer = f.get("answer")
    if answer not in ANSWERS:
        raise ProtocolError(INVALID, f"decision.answer must be one of {', '.join(ANSWERS)}", rid)
    rules = f.get("rules") or []
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise ProtocolError(INVALID, "decision.rules must be a list of strings", rid)
    return Decision(answer=answer, id=rid, rules=tuple(rules), reason=_text(f, "reason", "decision", required=False) or "")


def _parse_error(f: dict) -> ErrorReply:
    return ErrorReply(
        code=_text(f, "code", "error", required=False) or "error",
        message=_text(f, "message", "error", required=False) or "",
        ref=_text(f, "ref", "error", required=False),
    )


_CLIENT_PARSERS: dict[str, Callable[[dict[str, Any]], ClientMessage]] = {
    "hello": _parse_hello, "status": _parse_status, "request": _parse_request, "withdraw": _parse_withdraw}
_SERVER_PARSERS: dict[str, Callable[[dict[str, Any]], ServerMessage]] = {
    "welcome": _parse_welcome, "queued": _parse_queued, "decision": _parse_decision, "error": _parse_error,
    "acknowledge": lambda f: Acknowledge(), "withdraw_acknowledgement": lambda f: WithdrawAcknowledgement()}


# ---------------------------------------------------------------------------
# Field helpers


@overload
def _text(f: dict, key: str, kind: str, *, required: Literal[True], empty: bool = True) -> str: ...
@overload
def _text(f: dict, key: str, kind: str, *, required: bool, empty: bool = True) -> str | None: ...
def _text(f: dict, key: str, kind: str, *, required: bool, empty: bool = True) -> str | None:
    value = f.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (not empty and not value):
        raise ProtocolError(INVALID, f"{kind}.{key} must be a {'non-empty ' if not empty else ''}string", frame_ref(f))
    if len(value) > MAX_TEXT:
        raise ProtocolError(INVALID, f"{kind}.{key} is longer than {MAX_TEXT} characters", frame_ref(f))
    return value


def _abs_paths(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) and _is_abs(p) for p in value):
        raise ProtocolError(INVALID, f"{where} must be a list of absolute paths")
    return tuple(value)


def _is_abs(path: str) -> bool:
    return bool(path) and "\x00" not in path and os.path.isabs(path)


def _finite_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def frame_ref(f: dict) -> str | None:
    """The frame's request id, when it has a usable one (for error replies)."""
    rid = f.get("id")
    return rid if isinstance(rid, str) and len(rid) <= MAX_TEXT else None


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
