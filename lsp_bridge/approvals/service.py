"""The one approval service: who answers a request-level access, for every front end.

The language server (``rootguard/access``) and the MCP server (a tool call the
engine put at ``request``) ask here, with the same chain, answers, time limit
and session grants:

1. **Session grants.** An earlier "allow for this session" answer covering every
   target (keyed by ``(need, canonical path)``) answers at once. Grants end when
   the window's folders (the LSP) or the roots (MCP) change: ``workspace_changed``.
2. **The tray**, when one is connected (``lsp_bridge.approvals.client.TrayClient``).
3. **The front end's own prompt**, passed in as a small callable: the editor's
   ``window/showMessageRequest`` (``lsp_bridge.lsp.approval``) or MCP elicitation
   (``lsp_bridge.mcp.server``). This module imports neither pygls nor mcp.
4. **Nobody**: ``no_approver``, denied, with a reason that says so.

Answers (``ANSWERS``): ``allow_once``, ``allow_session``, ``always`` (the tray
wrote a user rule: ``core.grants.always_rules``), ``deny``, ``timeout`` and
``no_approver``. Only the first three allow.

Time limit (``TimeLimit``): a person gets ``[approvals] timeout_seconds`` (the
countdown the tray shows, the figure prompts quote); the requester stops
waiting ``margin`` later, ``min(5 s, half the limit)``, so the approver's own
countdown always decides first and its answer has time to arrive. A prompt
that fails or runs out is denied once; nothing is stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_bridge.approvals.protocol import ALLOWING, DEFAULT_NEED
from lsp_bridge.approvals.protocol import CLIENT_ANSWERS as ANSWERS  # the one list of answers
from lsp_bridge.core.settings import DEFAULT_APPROVAL_TIMEOUT
from lsp_bridge.core.terminal_text import one_line

log = logging.getLogger("rootguard.approvals")

ALLOW_ONCE, ALLOW_SESSION, ALWAYS = "allow_once", "allow_session", "always"
DENY, TIMEOUT, NO_APPROVER = "deny", "timeout", "no_approver"
MARGIN_CAP = 5.0
TRAY = "the Root Guard tray"
EARLIER = "an earlier answer in this session"

# How each answer reads in a reply (``Outcome.text``), unless the approver said more.
ANSWER_TEXT = {
    ALLOW_ONCE: "Allow once",
    ALLOW_SESSION: "Allow for this session",
    ALWAYS: "Always (rule written to the user configuration)",
}


@dataclass(frozen=True)
class TimeLimit:
    """``[approvals] timeout_seconds`` and the one margin rule derived from it."""

    seconds: float

    @property
    def margin(self) -> float:
        return min(MARGIN_CAP, self.seconds / 2)

    @property
    def hard_stop(self) -> float:
        """How long the requester waits at most: the countdown plus the margin."""
        return self.seconds + self.margin


def time_limit(session: Any) -> TimeLimit:
    """The time limit of a ``core.session.Session`` (the first folder's configuration)."""
    configs = session.configs() if session is not None else []
    seconds = configs[0][1].approval_timeout if configs else DEFAULT_APPROVAL_TIMEOUT
    return TimeLimit(float(seconds))


@dataclass(frozen=True)
class ApprovalTarget:
    """One path an approval covers, and the policy it needs there."""

    path: str  # canonical
    need: str  # read | write | delete
    root: str | None = None
    relative: str | None = None


@dataclass(frozen=True)
class ApprovalRequest:
    """What a person is asked: who (tool), what (operation, targets), under which rule and why."""

    tool: str
    operation: str  # read | write | delete | rename | metadata
    targets: tuple[ApprovalTarget, ...]
    rule: str | None
    reason: str
    summary: str = ""  # one line for prompts that show text only (editor, MCP client)
    preview: str | None = None  # what a write changes (rules in words, unified diff), for the tray's prompt

    @property
    def keys(self) -> set[tuple[str, str]]:
        return {(t.need, t.path) for t in self.targets}


def request_from_decision(decision: Any, tool: str) -> ApprovalRequest:
    """An ``ApprovalRequest`` for one engine ``Decision`` (a rename asks for both ends)."""
    targets: tuple[ApprovalTarget, ...]
    if decision.dest is not None:
        targets = (
            ApprovalTarget(decision.path, "delete", decision.root),
            ApprovalTarget(decision.dest.path, "write", decision.dest.root),
        )
        shown = f"{decision.op} {decision.path} → {decision.dest.path}"
    else:
        targets = (ApprovalTarget(decision.path, DEFAULT_NEED.get(decision.op, "read"), decision.root),)
        shown = f"{decision.op} {decision.path}"
    # escaped: a path may hold a right-to-left override or a zero-width mark (the resolver refuses only controls)
    summary = one_line(f"{tool} asks to {shown}. Rule: {decision.rule or '(host baseline)'}. Reason: {decision.reason}")
    return ApprovalRequest(tool, decision.op, targets, decision.rule, decision.reason, summary)


@dataclass(frozen=True)
class Reply:
    """What one approver answered (``text`` optional: why, in the approver's words)."""

    answer: str
    text: str = ""
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Deferred:
    """The question went out with the call's own reply (MCP ``InputRequiredResult``).

    ``value`` is returned to the client as is; the answer arrives with the
    retried call and is passed to ``ApprovalService.answered``.
    """

    value: Any


@dataclass(frozen=True)
class Outcome:
    """The final answer to one request: what, from whom, and a sentence saying so."""

    answer: str
    approver: str | None
    text: str
    rules: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.answer in ALLOWING


# A front end's own prompt: (request, time limit) -> a reply, a deferral, or None when it cannot ask.
Step = Callable[[ApprovalRequest, TimeLimit], Awaitable[Reply | Deferred | None]]


class SessionGrants:
    """The "allow for this session" answers: ``(need, canonical path)`` pairs, for one workspace.

    ``generation`` counts workspace changes: an answer that arrives after the
    workspace changed (asked under another generation) is not stored.
    """

    def __init__(self) -> None:
        self._keys: set[tuple[str, str]] = set()
        self.generation = 0

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(sorted(self._keys))

    def covers(self, keys: Iterable[tuple[str, str]]) -> bool:
        wanted = set(keys)
        return bool(wanted) and wanted <= self._keys

    def add(self, keys: Iterable[tuple[str, str]], generation: int | None = None) -> bool:
        """Remember ``keys`` unless the workspace changed since ``generation``."""
        if generation is not None and generation != self.generation:
            return False
        self._keys.update(keys)
        return True

    def end(self) -> None:
        """The workspace changed: every grant ends."""
        self._keys.clear()
        self.generation += 1


class ApprovalService:
    """The chain, the answers, the time limit and the session grants of one session.

    ``session``: returns the current ``core.session.Session`` (its configuration
    gives the time limit). ``tray``: a connected-or-not ``TrayClient`` (set it
    when the connection is made). ``on_always``: called after an ``always``
    answer (the tray wrote a rule to the user file: reload the configuration).
    """

    def __init__(
        self,
        session: Callable[[], Any],
        *,
        tray: Any = None,
        grants: SessionGrants | None = None,
        on_always: Callable[[], object] | None = None,
    ):
        self._session = session
        self.tray = tray
        self.grants = grants if grants is not None else SessionGrants()
        self.on_always = on_always

    def time_limit(self) -> TimeLimit:
        return time_limit(self._session())

    def workspace_changed(self) -> None:
        self.grants.end()

    @property
    def tray_connected(self) -> bool:
        return self.tray is not None and bool(self.tray.connected)

    async def ask(self, request: ApprovalRequest, step: Step | None = None, *,
                  approver: str = "the editor") -> Outcome | Deferred:
        """Run the chain for ``request``: grants, tray, ``step`` (named ``approver``), nobody."""
        if not request.targets:
            return Outcome(DENY, None, "nothing to approve: denied")
        if self.grants.covers(request.keys):
            return Outcome(ALLOW_SESSION, EARLIER, "allowed for this session earlier")
        generation = self.grants.generation
        limit = self.time_limit()
        reply: Reply | Deferred | None = await self._ask_tray(request, limit)
        who = TRAY
        if reply is None and step is not None:
            reply, who = await self._run_step(step, request, limit, approver), approver
        if isinstance(reply, Deferred):
            return reply
        if reply is None:
            return Outcome(NO_APPROVER, None, "approval required but no approver is running "
                                              f"(no Root Guard tray, and {approver} cannot ask): denied")
        return self._finish(request, reply, who, limit, generation)

    def answered(self, request: ApprovalRequest, reply: Reply, approver: str) -> Outcome:
        """The answer to a deferred question (it came with the retried call)."""
        return self._finish(request, reply, approver, self.time_limit(), self.grants.generation)

    # -- steps -----------------------------------------------------------------

    async def _ask_tray(self, request: ApprovalRequest, limit: TimeLimit) -> Reply | None:
        if not self.tray_connected:
            return None
        from lsp_bridge.approvals.client import Target

        targets = [Target(t.path, t.relative, t.root, t.need) for t in request.targets]
        try:
            decision = await self.tray.request_access(
                request.tool, request.operation, targets, rule=request.rule, reason=request.reason,
                timeout=limit.hard_stop, timeout_seconds=limit.seconds, preview=request.preview,
            )
        except Exception as exc:  # noqa: BLE001 - an approval that cannot be asked is denied
            log.warning("the approval request could not be sent to the tray: %s", exc)
            return Reply(DENY, f"the request could not be sent to the tray ({exc}): denied")
        if decision.answer == NO_APPROVER:
            return None  # the tray went away: the next approver asks
        return Reply(decision.answer, decision.reason, tuple(decision.rules))

    async def _run_step(self, step: Step, request: ApprovalRequest, limit: TimeLimit,
                        approver: str) -> Reply | Deferred | None:
        try:
            return await asyncio.wait_for(step(request, limit), limit.hard_stop)
        except TimeoutError:
            return Reply(TIMEOUT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the prompt failed: fail closed
            log.warning("%s could not ask: %s", approver, exc)
            return Reply(DENY, f"{approver} could not ask ({exc}): denied")

    # -- answers ---------------------------------------------------------------

    def _finish(self, request: ApprovalRequest, reply: Reply, approver: str, limit: TimeLimit,
                generation: int) -> Outcome:
        answer = reply.answer if reply.answer in ANSWERS else DENY
        if answer != reply.answer:
            text = f"unexpected answer {reply.answer!r} from {approver}: denied"
        elif answer in ALLOWING:
            text = ANSWER_TEXT[answer]
        elif answer == TIMEOUT:
            text = f"no answer within {limit.seconds:g} s from {approver}: denied once, nothing stored"
        elif answer == NO_APPROVER:
            text = reply.text or f"approval required but {approver} could not ask: denied"
        else:
            text = reply.text or f"denied by {approver}"
        if answer == ALLOW_SESSION:
            self.grants.add(request.keys, generation)
        elif answer == ALWAYS and self.on_always is not None:
            try:
                self.on_always()
            except Exception:  # noqa: BLE001 - the rule is written; a reload failure is only logged
                log.exception("reloading the configuration after an 'always' answer failed")
        return Outcome(answer, approver if answer != NO_APPROVER else None, text, reply.rules)


def targets_of(pieces: Sequence[dict[str, Any]]) -> tuple[ApprovalTarget, ...]:
    """``ApprovalTarget``s from the tray protocol's target dicts (path, relative, root, need)."""
    return tuple(ApprovalTarget(t["path"], t["need"], t.get("root"), t.get("relative")) for t in pieces)
