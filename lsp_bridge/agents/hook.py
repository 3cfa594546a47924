"""``rootguard hook AGENT``: one agent tool call, decided by the one engine, answered in the agent's words.

stdin holds the agent's hook JSON. The call becomes file accesses (the agent's module),
the boundary is the editor window containing the agent's ``cwd`` (else its project
folder) plus its own extra directories (``boundary``), every access is decided by
``Policy.decide``, and the answer is:

* allow: nothing at all (exit 0, no output): an "allow" would override the agent's guards;
* deny: exit 2, the reason on stderr (naming the rule, the file and how to get access),
  the agent's deny JSON on stdout;
* request: the tray's prompt (``approval``); with no tray Claude's ``ask``, else a deny
  that says how to approve;
* a shell tool: rewritten to run under ``rootguard run`` (``[agents] shell``).

Fail closed: malformed input, an unknown agent, an invalid configuration, an audit log
that cannot be written, any internal error or the hook's own deadline (``DEADLINE``,
before the agents' own hook timeouts, which let the call through) block the call. Every
decision is written to the audit log with the agent, its session and the tool.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from lsp_bridge.agents import AGENTS, agent_module
from lsp_bridge.agents.model import (
    EXIT_BLOCK,
    NO_OBJECTION,
    Access,
    Answer,
    HookInputError,
    ToolCall,
    UndecidableCall,
    one_line,
)

if TYPE_CHECKING:
    from typing import Any

    from lsp_bridge.agents.boundary import Boundary
    from lsp_bridge.core.policy import Decision
    from lsp_bridge.mcp.audit import AuditLog

DEADLINE = 50.0  # seconds: Claude lets a call through when its hook runs past 60 s (its default timeout)
MAX_INPUT = 8 << 20
USAGE = f"usage: rootguard hook AGENT < hook-input.json   (AGENT: {', '.join(AGENTS)}; see docs/agents.md)"


def main(argv: Sequence[str] | None = None, *, stdin=None, env: Mapping[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    if argv in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(argv) != 1:
        return _emit(Answer(EXIT_BLOCK, "", f"Root Guard: {USAGE}\n"))
    name = argv[0]
    module = agent_module(name) if name in AGENTS else None
    guard = Watchdog(module, deadline(os.environ if env is None else env))
    guard.start()
    try:
        raw = _read(stdin if stdin is not None else sys.stdin.buffer)
        answer = run(name, raw, os.environ if env is None else env, started=started, watchdog=guard)
    except Exception as err:  # noqa: BLE001 - a bug blocks the call, in one line
        if os.environ.get("ROOTGUARD_DEBUG"):
            raise
        answer = _blocked(module, None, f"Root Guard: internal error ({type(err).__name__}: {err}); the call is blocked")
    return guard.finish(answer)


def deadline(env: Mapping[str, str]) -> float:
    """``DEADLINE``, or a shorter one from ``ROOTGUARD_HOOK_DEADLINE`` (never longer: the agents let a
    call through once their own hook timeout passes)."""
    try:
        wanted = float(env.get("ROOTGUARD_HOOK_DEADLINE", DEADLINE))
    except ValueError:
        return DEADLINE
    return min(DEADLINE, wanted) if wanted > 0 else DEADLINE


def _read(stream) -> bytes:
    data = stream.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT} bytes")
    return data


def run(name: str, raw: bytes, env: Mapping[str, str], *, started: float | None = None,
        watchdog: Watchdog | None = None) -> Answer:
    """The answer to one hook call (no output written here)."""
    started = time.monotonic() if started is None else started
    if name not in AGENTS:
        return Answer(EXIT_BLOCK, "", f"Root Guard: unknown agent {name!r}: expected one of {', '.join(AGENTS)}; "
                                      "the call is blocked\n")
    module = agent_module(name)
    try:
        call = module.parse(_json(raw), env)
    except UndecidableCall as err:
        return _blocked(module, None, f"Root Guard: {module.LABEL} call not decided: {err}; the call is blocked")
    except HookInputError as err:
        return _blocked(module, None, f"Root Guard: malformed {module.LABEL} hook input: {err}; the call is blocked")
    if watchdog is not None:
        watchdog.call = call
    from lsp_bridge.agents.boundary import BoundaryError
    from lsp_bridge.mcp.audit import AuditError

    handler = Handler(module, call, env, started)
    try:
        return handler.answer()
    except BoundaryError as err:
        reason = f"Root Guard: {err}; the call is blocked"
        handler.audit_failure(reason)
        return _blocked(module, call, reason)
    except AuditError as err:
        return _blocked(module, call, f"Root Guard: {err}; the call is blocked (every decision is logged)")


def _json(raw: bytes) -> Any:
    import json

    if not raw.strip():
        raise HookInputError("no hook input on stdin (expected one JSON object)")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise HookInputError("the hook input is not UTF-8") from None
    except RecursionError:
        raise HookInputError("the hook input is nested too deep") from None
    except ValueError as err:
        raise HookInputError(f"the hook input is not JSON ({err})") from None


def _blocked(module: ModuleType | None, call: ToolCall | None, reason: str) -> Answer:
    if module is None:
        return Answer(EXIT_BLOCK, "", one_line(reason) + "\n")
    answer: Answer = module.deny(call, one_line(reason))
    return answer


def _emit(answer: Answer) -> int:
    try:
        if answer.stdout:
            sys.stdout.write(answer.stdout)
            sys.stdout.flush()
        if answer.stderr:
            sys.stderr.write(answer.stderr)
            sys.stderr.flush()
    except (BrokenPipeError, OSError):
        return EXIT_BLOCK if answer.exit_code else answer.exit_code
    return answer.exit_code


class Watchdog:
    """Blocks the call when the hook runs past ``deadline``: an agent lets a call through when
    its hook times out, so the hook answers first (``SIGALRM``: the main thread's handler writes
    the blocking answer and ends the process, whatever it was waiting for)."""

    def __init__(self, module: ModuleType | None, deadline: float) -> None:
        self.module = module
        self.deadline = deadline
        self.call: ToolCall | None = None
        self._done = False
        self._timer: Any = None

    def start(self) -> None:
        if hasattr(signal, "SIGALRM"):
            signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.deadline)
        else:  # no SIGALRM (Windows): a timer thread does the same
            import threading

            self._timer = threading.Timer(self.deadline, self._expire, (0, None))
            self._timer.daemon = True
            self._timer.start()

    def finish(self, answer: Answer) -> int:
        if hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        elif self._timer is not None:
            self._timer.cancel()
        self._done = True
        return _emit(answer)

    def _expire(self, signum: int, frame: object) -> None:
        if self._done:
            return
        self._done = True
        reason = f"Root Guard: no decision within {self.deadline:g} s; the call is blocked"
        _emit(_blocked(self.module, self.call, reason))
        os._exit(EXIT_BLOCK)


# ---------------------------------------------------------------------------


class Handler:
    """One parsed call: its boundary, the engine's decisions, the approval, the audit lines."""

    def __init__(self, module: ModuleType, call: ToolCall, env: Mapping[str, str], started: float) -> None:
        self.module = module
        self.call = call
        self.env = env
        self.started = started
        self.boundary: Boundary | None = None
        self._audit: AuditLog | None = None

    def answer(self) -> Answer:
        from lsp_bridge.agents.boundary import boundary_for

        self.boundary = boundary_for(self.call, self.env)
        if self.call.event == "DirectoryAdded":
            return self.directory_added()
        if self.call.event == "PermissionRequest":
            return self.permission_request()
        self.warn_extra_dirs()
        return self.tool_call()

    # -- tool calls ------------------------------------------------------------

    def tool_call(self) -> Answer:
        from lsp_bridge.agents.boundary import decide, deny_reason, no_approver_reason, pending, verdict

        assert self.boundary is not None
        call, boundary = self.call, self.boundary
        decided = decide(call.accesses, boundary.session)
        final = verdict(decided)
        if final == "deny":
            culprit = pending(decided, "deny")[0][1]
            reason = deny_reason(call, boundary, culprit)
            self.log(decided, "deny", reason)
            return _blocked(self.module, call, reason)
        approved: tuple[str, str] | None = None
        if final == "request":
            from lsp_bridge.agents import approval

            asking = pending(decided, "request")
            reason = self.request_summary(asking)
            if all(approval.granted(call, d) for _, d in asking):
                approved = ("allow_session", "an earlier answer in this agent session")
            else:
                question = approval.asked(asking)
                outcome = approval.ask(call, boundary, question, wait=self.time_left(), summary=reason)
                if outcome.allowed:
                    if outcome.answer == "allow_session":
                        approval.remember(call, question)
                    approved = (outcome.answer, outcome.approver)
                elif outcome.answer == "no_approver" and getattr(self.module, "ask", None) is not None \
                        and not call.is_shell:
                    self.log(decided, "request", reason, approval="ask", approver=f"{call.agent} (no tray)")
                    answer: Answer = self.module.ask(call, reason)
                    return answer
                else:
                    culprit = asking[0][1]
                    if outcome.answer == "no_approver":
                        why = no_approver_reason(call, boundary, culprit)
                    else:
                        said = f" ({outcome.reason})" if outcome.reason else ""
                        why = f"{reason} Not approved: {outcome.answer.replace('_', ' ')} from {outcome.approver}{said}."
                    self.log(decided, "deny", why, approval=outcome.answer, approver=outcome.approver)
                    return _blocked(self.module, call, why)
        if call.is_shell:
            return self.shell(decided, approved)
        self.log(decided, "allow", "allowed" if approved is None else f"approved: {approved[0]}",
                 approval=approved[0] if approved else None, approver=approved[1] if approved else None)
        return NO_OBJECTION

    def request_summary(self, asking: Sequence[tuple[Access, Decision]]) -> str:
        from lsp_bridge.agents.boundary import request_reason

        assert self.boundary is not None
        reason = request_reason(self.call, self.boundary, asking[0][1])
        if len(asking) > 1:
            reason += f" (and {len(asking) - 1} more path{'s' if len(asking) > 2 else ''} of the same call)"
        return reason

    def shell(self, decided: Sequence[tuple[Access, Decision]], approved: tuple[str, str] | None) -> Answer:
        assert self.boundary is not None
        call, boundary = self.call, self.boundary
        mode = boundary.shell_mode
        if mode == "allow":
            self.log(decided, "allow", "[agents] shell = \"allow\": the command runs unconfined", code="shell-unconfined")
            return NO_OBJECTION
        if mode == "deny":
            reason = (f"Root Guard: {call.agent} {call.tool}: shell commands are denied for agents "
                      f"([agents] shell = \"deny\"); use the agent's file tools, or set shell = \"confine\" in the "
                      "user configuration")
            self.log(decided, "deny", reason, code="shell-denied")
            return _blocked(self.module, call, reason)
        problem = None
        if not getattr(self.module, "REWRITES_SHELL", False):
            problem = f"{self.module.LABEL} does not take a rewritten command from its hook, so it cannot run confined"
        else:
            from lsp_bridge.sandbox.runner import find_bwrap

            if find_bwrap(dict(self.env)) is None:
                problem = ("bubblewrap (bwrap) is not installed, so the command cannot run confined "
                           "(apt-get install bubblewrap)")
        if problem is not None:
            reason = (f"Root Guard: {call.agent} {call.tool}: denied: {problem}; [agents] shell = \"confine\" "
                      "denies what it cannot confine")
            self.log(decided, "deny", reason, code="shell-unconfinable")
            return _blocked(self.module, call, reason)
        reason = (f"Root Guard: runs confined by `rootguard run` to {boundary.describe()} "
                  f"({', '.join(boundary.roots)})")
        self.log(decided, "allow", reason, code="shell-confined",
                 approval=approved[0] if approved else None, approver=approved[1] if approved else None)
        answer: Answer = self.module.confine(call, boundary.roots, reason)
        return answer

    def time_left(self) -> float:
        return deadline(self.env) - (time.monotonic() - self.started) - 3.0

    # -- widenings from the agent's side ------------------------------------------

    def directory_added(self) -> Answer:
        from lsp_bridge.agents import approval
        from lsp_bridge.agents.widening import measure

        assert self.boundary is not None
        widening = measure(self.call, self.boundary, self.call.added_dirs, budget=min(10.0, self.time_left() / 2))
        shown = approval.announce(self.call, self.boundary, widening.status(self.call, self.boundary))
        self.log_widening(widening.line, "allow" if not widening.widens else "warn", shown)
        message = widening.line
        if widening.widens:
            message += ("; Root Guard keeps deciding on the editor window's union: files there stay outside "
                        "until the folder is open in the editor")
        answer: Answer = self.module.notice(self.call, message)
        return answer

    def permission_request(self) -> Answer:
        from lsp_bridge.agents import approval
        from lsp_bridge.agents.widening import measure

        assert self.boundary is not None
        call, boundary = self.call, self.boundary
        if not call.added_dirs:
            self.log([], "allow", "a permission request that adds no directory: Claude asks as usual")
            return NO_OBJECTION
        widening = measure(call, boundary, call.added_dirs, verb="asks to add",
                           budget=min(10.0, self.time_left() / 3))
        if not widening.widens:
            self.log_widening(widening.line, "allow", False)
            return NO_OBJECTION
        question = approval.Asked("write", tuple(("write", d, None) for d in call.added_dirs))
        outcome = approval.ask(call, boundary, question, wait=self.time_left(), summary=widening.line,
                               preview="\n".join(widening.lines), status=widening.status(call, boundary))
        if outcome.allowed:
            self.log_widening(widening.line, "allow", True, approval=outcome.answer, approver=outcome.approver)
            return NO_OBJECTION  # Claude shows its own prompt; the person approved the widening in the tray
        how = ("approve it in the Root Guard tray (start it with `rootguard tray`) or open the folder in the editor "
               "window" if outcome.answer == "no_approver" else f"{outcome.answer.replace('_', ' ')} in the tray")
        reason = f"{widening.line}. Denied: {how}."
        self.log_widening(reason, "deny", outcome.answer != "no_approver", approval=outcome.answer,
                          approver=outcome.approver)
        return _blocked(self.module, call, reason)

    def warn_extra_dirs(self) -> None:
        """The agent's extra directories from its settings: warned once per agent session."""
        assert self.boundary is not None
        added = [e.path for e in self.boundary.extra]
        if not added:
            return
        from lsp_bridge.agents import approval
        from lsp_bridge.agents.widening import first_time, measure

        if not first_time(self.call, added):
            return
        folders = self.boundary.folders
        bare = type(self.boundary)(folders, (), self.boundary.window,
                                   _session_of(folders, self.boundary.session.env), self.boundary.problems)
        widening = measure(self.call, bare, added, verb="settings add", budget=min(5.0, self.time_left() / 4))
        if widening.widens:
            shown = approval.announce(self.call, self.boundary, widening.status(self.call, self.boundary))
            self.log_widening(widening.line, "warn", shown)

    # -- audit -----------------------------------------------------------------

    def log(self, decided: Sequence[tuple[Access, Decision]], final: str, reason: str, *, code: str | None = None,
            approval: str | None = None, approver: str | None = None) -> None:
        correlation = self.call.correlation or os.urandom(16).hex()
        if not decided:
            self._record({"decision": final, "reason": reason, "code": code or "no-paths",
                          "correlation_id": correlation}, approval, approver)
            return
        for access, decision in decided:
            self._record({
                "decision": final, "reason": reason if decision.decision != "allow" or final == "allow" else
                f"the call was {final}: {reason}", "correlation_id": correlation, "op": access.op,
                "policy": decision.decision, "rule": decision.rule, "code": code,
                "root_digest": _digest(decision.root), "relative_path": _relative(decision),
                "canonicalization": decision.path,
                **({"dest_relative_path": decision.dest.path} if decision.dest is not None else {}),
            }, approval, approver)

    def log_widening(self, line: str, final: str, shown: bool, *, approval: str | None = None,
                     approver: str | None = None) -> None:
        added = list(self.call.added_dirs) or [e.path for e in (self.boundary.extra if self.boundary else ())]
        self._record({"decision": final, "reason": line, "code": "agent-widened", "shown_in_tray": shown,
                      "added": added, "correlation_id": self.call.correlation or os.urandom(16).hex()}, approval, approver)

    def audit_failure(self, reason: str) -> None:
        try:
            self._record({"decision": "deny", "reason": reason, "code": "hook-error",
                          "correlation_id": self.call.correlation or os.urandom(16).hex()}, None, None)
        except OSError:
            pass  # the call is blocked anyway

    def _record(self, fields: dict, approval: str | None, approver: str | None) -> None:
        from lsp_bridge.mcp.audit import AuditLog, now_text

        if self._audit is None:
            self._audit = AuditLog()
        window = self.boundary.window if self.boundary is not None else None
        entry = {
            "time": now_text(), "client": f"rootguard hook {self.call.agent}", "session_id": self.call.session or None,
            "protocol_version": None, "tool": self.call.tool or self.call.event, "project_id": window.session if window
            else None, "root_digest": None, "relative_path": None, "canonicalization": None,
            "agent": self.call.agent, "agent_session": self.call.session or None, "event": self.call.event,
            "window": window.session if window else None, **fields,
        }
        if approval is not None:
            entry["approval"], entry["approver"] = approval, approver
        self._audit.record(entry)


def _digest(root: str | None) -> str | None:
    from lsp_bridge.mcp.audit import root_digest

    return root_digest(root) if root else None


def _relative(decision: Decision) -> str:
    root = decision.root
    if root and decision.path.startswith(root.rstrip("/") + "/"):
        return decision.path[len(root.rstrip("/")) + 1:]
    return decision.path


def _session_of(folders: Sequence[str], env: Mapping[str, str]):
    from lsp_bridge.agents.boundary import open_checked

    return open_checked(folders, env)
