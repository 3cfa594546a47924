"""``rootguard/access`` over the one approval service, and the editor's prompt as its front-end step.

The handler decides with the policy engine; a ``request`` goes to
``lsp_bridge.approvals.service`` (session grants → tray → this editor's
``window/showMessageRequest`` → denied with a reason). Only the editor step
and the reply's shape are the language server's own.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from lsp_bridge.approvals.service import (
    ALLOW_ONCE,
    ALLOW_SESSION,
    DENY,
    ApprovalRequest,
    Outcome,
    Reply,
    Step,
    TimeLimit,
    request_from_decision,
)

TITLES = {ALLOW_ONCE: "Allow once", ALLOW_SESSION: "Allow for this session", DENY: "Deny"}
EDITOR = "the editor"


def param(params: Any, name: str, default=None):
    """A field of custom-request params (pygls hands them over as namedtuples or dicts)."""
    if isinstance(params, dict):
        return params.get(name, default)
    return getattr(params, name, default)


async def decide_access(ls, params: Any) -> dict:
    """The ``rootguard/access`` reply: the engine's decision, and a person's answer when it asks."""
    from lsp_bridge.core.policy import PolicyInputError

    op = param(params, "op", "read")
    path = param(params, "path")
    dest = param(params, "dest")
    tool = param(params, "tool") or "editor"
    policy = ls.tracker.session.policy
    try:
        decision = policy.decide(op, path, dest)
    except (PolicyInputError, TypeError) as err:
        return {"decision": "deny", "path": path, "rule": None, "reason": f"invalid request: {err}"}
    if decision.decision != "request":
        return decision.to_json()
    outcome = await ls.approvals.ask(request_from_decision(decision, tool), editor_step(ls), approver=EDITOR)
    if not isinstance(outcome, Outcome):  # the editor step never defers; fail closed if it did
        outcome = Outcome(DENY, None, "the approval could not be completed: denied")
    data = decision.to_json()
    verdict = "allow" if outcome.allowed else "deny"
    reason = f"{outcome.text} ({decision.reason})" if outcome.allowed else outcome.text
    data.update({"decision": verdict, "reason": reason, "policy_decision": decision.decision,
                 "approval": outcome.answer, "approver": outcome.approver})
    return data


def editor_step(ls) -> Step | None:
    """``window/showMessageRequest`` as the service's front-end step; None when the client cannot show one."""
    window = ls.client_capabilities.window
    if window is None or window.show_message is None:
        return None

    async def ask(request: ApprovalRequest, limit: TimeLimit) -> Reply:
        message = f"Root Guard: {request.summary} (denied in {limit.seconds:g} s without an answer)"
        chosen = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=message,
                actions=[types.MessageActionItem(title=TITLES[a]) for a in (ALLOW_ONCE, ALLOW_SESSION, DENY)],
            )
        )
        title = chosen.title if chosen is not None else None
        for answer, shown in TITLES.items():
            if title == shown and answer != DENY:
                return Reply(answer)
        return Reply(DENY, "denied by the user" if title == TITLES[DENY] else "prompt dismissed: denied")

    return ask
