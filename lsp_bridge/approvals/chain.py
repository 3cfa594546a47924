"""Who answers a request-level access: the tray, else the editor, else nobody (deny).

Order: a grant for this session (``Allow for this session`` earlier) → the tray
(approval broker) → ``window/showMessageRequest`` when the client can show one
→ a denial saying that no approver is running. An unanswered prompt is denied
once when ``[approvals] timeout_seconds`` runs out; nothing is stored.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from lsp_bridge.core.settings import Verdict

ALLOW_ONCE, ALLOW_SESSION, DENY = "Allow once", "Allow for this session", "Deny"


def param(params: Any, name: str, default=None):
    """A field of custom-request params (pygls hands them over as namedtuples or dicts)."""
    if isinstance(params, dict):
        return params.get(name, default)
    return getattr(params, name, default)


def _answer(decision, verdict: Verdict, reason: str) -> dict:
    data = decision.to_json()
    data.update({"decision": verdict, "reason": reason, "policy_decision": decision.decision})
    return data


async def ask_person(ls, params: Any) -> dict:
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
    key = (op, decision.path)
    if key in ls.session_grants:
        return _answer(decision, "allow", "allowed for this session earlier")

    timeout = _timeout(ls)
    answer = await _ask_tray(ls, decision, tool, timeout)
    if answer is None:
        answer = await _ask_editor(ls, decision, tool, timeout)
    if answer is None:
        return _answer(decision, "deny", "approval required but no approver is running (no tray, and this editor cannot show prompts)")
    verdict, how = answer
    if how == ALLOW_SESSION:
        ls.session_grants.add(key)
    return _answer(decision, verdict, f"{how} ({decision.reason})" if verdict == "allow" else how)


def _timeout(ls) -> float:
    configs = ls.tracker.session.configs()
    return configs[0][1].approval_timeout if configs else 30.0


async def _ask_tray(ls, decision, tool: str, timeout: float):
    tray = getattr(ls, "_tray", None)
    if tray is None:
        return None
    return await tray.ask(decision, tool, timeout)


async def _ask_editor(ls, decision, tool: str, timeout: float):
    window = ls.client_capabilities.window
    if window is None or window.show_message is None:
        return None
    target = decision.path + (f" → {decision.dest.path}" if decision.dest is not None else "")
    message = (
        f"Root Guard: {tool} asks to {decision.op} {target}. "
        f"Rule: {decision.rule or '(host baseline)'}. Reason: {decision.reason}"
    )
    request = ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=message,
            actions=[types.MessageActionItem(title=t) for t in (ALLOW_ONCE, ALLOW_SESSION, DENY)],
        )
    )
    try:
        chosen = await asyncio.wait_for(request, timeout)
    except asyncio.TimeoutError:
        return ("deny", f"no answer within {timeout:g} s: denied once")
    except Exception as err:  # the client failed the request: fail closed
        return ("deny", f"the editor could not ask ({err}): denied")
    title = chosen.title if chosen is not None else None
    if title == ALLOW_ONCE:
        return ("allow", ALLOW_ONCE)
    if title == ALLOW_SESSION:
        return ("allow", ALLOW_SESSION)
    return ("deny", "denied by the user" if title == DENY else "prompt dismissed: denied")
