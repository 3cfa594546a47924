"""``rootguard mcp``: the guarded MCP file server on stdio (mcp SDK 2.x, lowlevel ``Server``).

A thin front end over ``file_tools``: it turns MCP tool calls into plans, gets
approvals for request-level plans, and turns results and ``ToolError`` codes into
tool results. What it adds is the session around the calls:

* **Roots.** ``--root DIR`` (absolute, repeatable) are the server's roots. MCP
  client roots, when the client offers them, only narrow them (a client root
  outside the ``--root`` set is ignored); with no ``--root`` the client's roots
  are the baseline; with neither, the server refuses to start. Handshake-era
  clients are asked with ``roots/list`` (again after
  ``notifications/roots/list_changed``); 2026-07-28 clients are asked once,
  with an ``InputRequiredResult`` on the first tool call. A roots change
  rebuilds the policy session: session grants are dropped and ids of removed
  roots become unknown (an id is never reused for another folder).
* **Approvals.** A ``request`` plan goes to the one approval service
  (``lsp_bridge.approvals.service``): session grants, then the tray, then the
  MCP client by elicitation (``elicitation/create`` on handshake versions, an
  ``InputRequiredResult`` on 2026-07-28; the front-end step below), else it is
  denied with ``no_approver``.
* **Audit and mirror mode** live in ``file_tools``/``audit``.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from lsp_bridge import __version__ as VERSION
from lsp_bridge.approvals.service import (
    ApprovalRequest,
    ApprovalService,
    Deferred,
    Outcome,
    Reply,
    SessionGrants,
    Step,
    TimeLimit,
    targets_of,
)
from lsp_bridge.core.paths import canonical, is_within, read_regular
from lsp_bridge.mcp.audit import AuditLog
from lsp_bridge.mcp.file_tools import QUICK_TOOLS, Caller, FileTools, Limits, Plan, ToolError
from lsp_bridge.mcp.stdio import serve_stdio
from lsp_bridge.mcp.tool_list import INSTRUCTIONS, NO_ROOTS, SERVER_NAME, tool_definitions

if TYPE_CHECKING:  # imported lazily at run time
    import anyio.abc

    from lsp_bridge.approvals.client import TrayClient

log = logging.getLogger("rootguard.mcp")

CLIENT = "the MCP client"
ROOTS_KEY = "rootguard/roots"
APPROVAL_KEY = "rootguard/approval"
MAX_PENDING = 256
ROOTS_TIMEOUT = 10.0
APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {
            "type": "string",
            "title": "Answer",
            "enum": ["deny", "allow_once", "allow_session"],
            "default": "deny",
        }
    },
    "required": ["answer"],
}


@dataclass
class _Pending:
    """A question sent with an ``InputRequiredResult``, waiting for the retried call."""

    kind: str  # roots | approval
    fingerprint: str = ""
    deadline: float = 0.0


class GuardedServer:
    """One stdio session: roots, the file tools, approvals, and the MCP handlers."""

    def __init__(
        self,
        roots: Sequence[str],
        *,
        mirror: bool = False,
        limits: Limits = Limits(),
        tray_socket: str | None = None,
        use_tray: bool = True,
        env=os.environ,
        audit: AuditLog | None = None,
    ):
        self.server_roots = tuple(dict.fromkeys(canonical(r) for r in roots))
        self.env = env
        self.mirror = mirror
        self.limits = limits
        self.audit = audit or AuditLog()
        self.session_id = uuid.uuid4().hex[:16]
        self.taken_ids: dict[str, str] = {}
        self.approvals = ApprovalService(lambda: self.tools.session, grants=SessionGrants(),
                                         on_always=lambda: self.tools.session.reload_configs())
        self.tools = self._build(self.server_roots)
        self.roots_state = "unknown"  # unknown | fresh | stale (client roots)
        self.tray_socket = tray_socket
        self.use_tray = use_tray
        self.tray: TrayClient | None = None
        self.exit_code = 0
        self._pending: dict[str, _Pending] = {}
        self._lock = anyio.Lock()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._held_shown: list[str] = []
        self.server = self._server()

    # -- wiring ------------------------------------------------------------------

    def _server(self) -> Server:
        server = Server(
            SERVER_NAME,
            version=VERSION,
            instructions=INSTRUCTIONS,
            on_list_tools=self.on_list_tools,
            on_call_tool=self.on_call_tool,
        )
        server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, self.on_roots_changed)
        server.middleware.append(self._startup_guard)
        return server

    def run(self) -> int:
        """Serve until the client goes away; the exit code (130 on Ctrl-C)."""
        try:
            anyio.run(self.serve)
        except KeyboardInterrupt:
            return 130
        return self.exit_code

    async def serve(self) -> None:
        """Serve stdin/stdout until the client goes away (or the start is refused)."""
        await self._start_tray()
        try:
            async with serve_stdio() as (read, write), anyio.create_task_group() as group:
                self._task_group = group
                options = self.server.create_initialization_options(NotificationOptions(tools_changed=True))
                await self.server.run(read, write, options)
                group.cancel_scope.cancel()
        except* (BrokenPipeError, ConnectionResetError):  # the client went away mid-reply: the session is over
            log.warning("the MCP client closed its end of the connection; stopping")
        finally:
            if self.tray is not None:
                await self.tray.close()
            self.audit.close()

    # -- handlers ------------------------------------------------------------------

    async def on_list_tools(self, ctx, params) -> types.ListToolsResult:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await self._refresh_roots(ctx)
        return types.ListToolsResult.model_validate({"tools": tool_definitions(self.tools.project_ids)})

    async def on_roots_changed(self, ctx, params) -> None:
        """The client's roots changed: ask again before the next call is served."""
        self.roots_state = "stale"

    async def on_call_tool(self, ctx, params: types.CallToolRequestParams):
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        state = self._pending.pop(params.request_state, None) if params.request_state else None
        if modern:
            question = self._ask_modern_roots(ctx, params, state)
            if question is not None:
                return question
        else:
            await self._refresh_roots(ctx)
        if params.name == "list_projects":
            return _ok(self.tools.list_projects())
        tools = self.tools
        caller = self._caller(ctx)
        try:
            # Decisions and I/O run in a worker thread: a long search or a big read never holds the other
            # calls. A call that needs no approval is decided, logged and done in one trip there. A
            # read_file whose decision is only lookups and whose file is small is served right here.
            decided = self._decide_quickly(tools, params.name, params.arguments or {}, caller)
            if decided is None:
                decided = await anyio.to_thread.run_sync(self._decide_and_run, tools, params.name,
                                                         params.arguments or {}, caller)
            held = tools.session.held()
            if held != self._held_shown:  # a held configuration change: the person sees it in the tray
                self._held_shown = held
                if self.tray is not None:
                    await self._publish()
            if not isinstance(decided, Plan):
                return decided
            plan = decided
            approval = approver = None
            if plan.verdict == "request":
                try:
                    outcome = await self._approval(ctx, params, plan, state, modern)
                except anyio.get_cancelled_exc_class():  # the client gave up waiting: still one line for it
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(_log_cancelled, tools, plan)
                    raise
                if isinstance(outcome, Deferred):
                    return outcome.value
                approval, approver = outcome.answer, outcome.approver
            if tools is not self.tools:
                raise tools.reject(plan, "workspace_changed", "the workspace roots changed while this call waited "
                                   "for approval; call list_projects and try again", approval, approver)
            return _ok(await anyio.to_thread.run_sync(tools.conclude, plan, approval, approver))
        except ToolError as err:
            return _error(err)
        except Exception as exc:  # noqa: BLE001 - every failure is a coded error with an audit line
            log.warning("%s failed unexpectedly: %s", params.name, type(exc).__name__)
            return _error(tools.failure(params.name, params.arguments, caller, exc))

    async def _approval(self, ctx, params, plan: Plan, state, modern: bool) -> Outcome | Deferred:
        """The one approval service's answer for a request-level plan (or a question deferred to the client)."""
        env = self.tools.session.env
        preview = await anyio.to_thread.run_sync(_preview, plan, env)  # what a write changes, for the tray
        request = ApprovalRequest(plan.tool, plan.operation, targets_of(plan.approval_targets()),
                                  plan.rule, plan.reason, plan.describe(), preview=preview)
        if state is not None and state.kind == "approval":  # the retried call brings the answer
            return self.approvals.answered(request, self._client_answer(params, plan, state), CLIENT)
        return await self.approvals.ask(request, self._client_step(ctx, plan, modern), approver=CLIENT)

    def _decide_quickly(self, tools: FileTools, name: str, arguments: dict,
                        caller: Caller) -> Plan | dict[str, Any] | None:
        """On the event loop, a ``read_file`` or ``list_directory`` that ``FileTools.plan_quick`` decides:
        refused, or allowed and ``concludes_quickly`` (a small file or directory), it is logged and done
        here; a plan that needs an approval or big I/O is returned (the I/O then runs in a worker).
        None: plan in a worker."""
        if name not in QUICK_TOOLS:
            return None
        return tools.plan_quick(name, arguments, caller,
                                then=lambda plan: self._decide_and_run(tools, name, arguments, caller, plan))

    def _decide_and_run(self, tools: FileTools, name: str, arguments: dict, caller: Caller,
                        plan: Plan | None = None) -> Plan | dict[str, Any]:
        """In the worker: the plan; when it needs no approval, its audit line, its I/O and the reply too."""
        plan = plan or tools.plan(name, arguments, caller)
        if plan.verdict == "request":
            return plan  # the approval is asked from the event loop
        if tools is not self.tools and plan.verdict == "allow":
            raise tools.reject(plan, "workspace_changed", "the workspace roots changed while this call was "
                               "decided; call list_projects and try again")
        return _ok(tools.conclude(plan))

    async def _startup_guard(self, ctx, call_next):
        """With no --root, a client that offers no roots cannot be served: refuse to start."""
        if not self.server_roots and ctx.request_id is not None and ctx.method != "ping":
            if ctx.method == "initialize":
                offered = isinstance((ctx.params or {}).get("capabilities"), dict) and (
                    ctx.params["capabilities"].get("roots") is not None
                )
            else:
                offered = _offers_roots(ctx)
            if not offered:
                self._refuse(NO_ROOTS)
                raise MCPError(code=types.INVALID_REQUEST, message=NO_ROOTS)
        return await call_next(ctx)

    def _refuse(self, message: str) -> None:
        if self.exit_code == 0:
            print(message, file=sys.stderr, flush=True)
            self.exit_code = 2
            if self._task_group is not None:
                self._task_group.start_soon(self._stop_soon)

    async def _stop_soon(self) -> None:
        """Exit once the error response had time to reach the client.

        A plain cancel would wait for the stdin reader thread, which blocks until the
        client writes or closes stdin; a refused start must not hang, so it exits here.
        """
        await anyio.sleep(0.5)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(self.exit_code)

    # -- roots -----------------------------------------------------------------------

    def _build(self, roots: Sequence[str]) -> FileTools:
        tools = FileTools(roots, env=self.env, audit=self.audit, mirror=self.mirror, limits=self.limits,
                          taken_ids=self.taken_ids, grants=self.approvals.grants)
        return tools

    async def _refresh_roots(self, ctx) -> None:
        """Handshake era: ask ``roots/list`` when the client offers roots and they may have changed."""
        if self.roots_state == "fresh":
            return
        if not _offers_roots(ctx):
            self.roots_state = "fresh"
            return
        async with self._lock:
            if self.roots_state == "fresh":
                return
            self.roots_state = "fresh"  # a list_changed arriving while we ask marks it stale again
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    result = await ctx.session.send_request(
                        types.ListRootsRequest(), types.ListRootsResult, request_read_timeout_seconds=ROOTS_TIMEOUT
                    )
            except Exception as exc:  # noqa: BLE001 - a client that cannot answer keeps the current roots
                log.warning("the client offers roots but roots/list failed (%s); keeping the current roots", exc)
                return
            if self._apply_client_roots([str(r.uri) for r in result.roots]):
                await ctx.session.send_tool_list_changed()
                await self._publish(roots_changed=True)

    def _ask_modern_roots(self, ctx, params, state: _Pending | None):
        """2026-07-28: roots travel in an ``InputRequiredResult`` round trip, asked once."""
        if self.roots_state != "unknown":
            return None
        if not _offers_roots(ctx):
            self.roots_state = "fresh"
            return None
        if state is not None and state.kind == "roots":
            answer = (params.input_responses or {}).get(ROOTS_KEY)
            self.roots_state = "fresh"
            if isinstance(answer, types.ListRootsResult):
                if self._apply_client_roots([str(r.uri) for r in answer.roots]) and self._task_group is not None:
                    self._task_group.start_soon(self._publish, True)
            return None
        nonce = self._remember(_Pending("roots"))
        return types.InputRequiredResult(input_requests={ROOTS_KEY: types.ListRootsRequest()}, request_state=nonce)

    def _apply_client_roots(self, uris: Sequence[str]) -> bool:
        """Narrow (or form) the baseline with the client's roots; True when the roots changed."""
        offered = [p for p in (_uri_path(u) for u in uris) if p is not None]
        effective = intersect_roots(self.server_roots, offered)
        for path in offered:
            if self.server_roots and not any(is_within(path, s) or is_within(s, path) for s in self.server_roots):
                log.warning("ignoring the client root %s: it is outside every --root", path)
        if tuple(effective) == self.tools.roots:
            return False
        self.approvals.workspace_changed()  # session grants end with the roots they were given for
        self.tools = self._build(effective)
        self._pending = {k: v for k, v in self._pending.items() if v.kind != "approval"}
        return True

    # -- approvals ---------------------------------------------------------------

    def _client_step(self, ctx, plan, modern: bool) -> Step | None:
        """MCP elicitation as the approval service's front-end step; None when the client cannot ask."""
        if not _offers_elicitation(ctx):
            return None

        async def ask(request: ApprovalRequest, limit: TimeLimit) -> Reply | Deferred | None:
            if modern:  # 2026-07-28: the question travels with this call's reply
                nonce = self._remember(_Pending("approval", plan.fingerprint(), time.monotonic() + limit.hard_stop))
                question = types.ElicitRequest(params=_approval_form(plan, limit))
                return Deferred(types.InputRequiredResult(input_requests={APPROVAL_KEY: question}, request_state=nonce))
            return await self._elicit_now(ctx, plan, limit)

        return ask

    async def _elicit_now(self, ctx, plan, limit: TimeLimit) -> Reply | None:
        try:
            result = await ctx.session.send_request(
                types.ElicitRequest(params=_approval_form(plan, limit)),
                types.ElicitResult,
                request_read_timeout_seconds=limit.hard_stop,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
        except NoBackChannelError:
            return None
        except MCPError as exc:
            return Reply("timeout" if exc.code == types.REQUEST_TIMEOUT else "deny")
        except Exception as exc:  # noqa: BLE001 - a malformed answer is a denial
            log.warning("the client's approval answer was unusable: %s", exc)
            return Reply("deny", "the MCP client's answer was unusable: denied")
        return Reply(_elicited(result))

    def _client_answer(self, params, plan, state: _Pending) -> Reply:
        """The retried call's answer to our elicitation, if it is for this very call and in time."""
        if state.fingerprint != plan.fingerprint():
            return Reply("deny", "the answer was for another call: denied")
        if time.monotonic() > state.deadline:
            return Reply("timeout")
        answer = (params.input_responses or {}).get(APPROVAL_KEY)
        return Reply(_elicited(answer) if isinstance(answer, types.ElicitResult) else "deny")

    def _remember(self, pending: _Pending) -> str:
        while len(self._pending) >= MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
        nonce = secrets.token_urlsafe(18)
        self._pending[nonce] = pending
        return nonce

    # -- tray ------------------------------------------------------------------------

    async def _start_tray(self) -> None:
        if not self.use_tray:
            return
        try:
            from lsp_bridge.approvals.client import TrayClient

            self.tray = TrayClient(self.session_id, "rootguard mcp", self.tools.roots, socket=self.tray_socket)
            self.approvals.tray = self.tray
            await self.tray.start()
            await self._publish()
        except Exception as exc:  # noqa: BLE001 - no tray is a normal condition
            log.info("no tray: %s", exc)

    async def _publish(self, roots_changed: bool = False) -> None:
        """Show this session in the tray; a roots change also drops its grants there."""
        if self.tray is None:
            return
        status = self.tools.session.scope.to_json() if self.tools.session.scope else {"roots": []}
        status.update({"roots": list(self.tools.roots), "widened": False,
                       "warnings": [f"Root Guard: {line}" for line in self.tools.session.held()]})
        if roots_changed:
            await self.tray.set_folders(self.tools.roots)
        await self.tray.publish_status(status)

    def _caller(self, ctx) -> Caller:
        params = ctx.session.client_params
        name = params.client_info.name if params is not None and params.client_info is not None else "unknown"
        return Caller(name, self.session_id, ctx.protocol_version)


# ---------------------------------------------------------------------------
# Helpers


def intersect_roots(server: Sequence[str], client: Sequence[str]) -> list[str]:
    """Client roots narrow the server's: the deeper of each overlapping pair; none outside."""
    if not server:
        return list(dict.fromkeys(client))
    found = []
    for c in client:
        for s in server:
            if is_within(c, s):
                found.append(c)
            elif is_within(s, c):
                found.append(s)
    return list(dict.fromkeys(found))


def _uri_path(uri: str) -> str | None:
    """A ``file://`` root as a canonical existing directory, else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    if not os.path.isabs(path) or "\x00" in path:
        return None
    real = os.path.realpath(path)
    return real if os.path.isdir(real) else None


def _offers_roots(ctx) -> bool:
    caps = ctx.session.client_capabilities
    return caps is not None and caps.roots is not None


def _offers_elicitation(ctx) -> bool:
    caps = ctx.session.client_capabilities
    return caps is not None and caps.elicitation is not None


def _log_cancelled(tools: FileTools, plan: Plan) -> None:
    try:
        tools.reject(plan, "cancelled", f"the client cancelled the call while it waited for approval ({plan.reason})")
    except ToolError:  # the log itself failed: the server's log says so
        log.warning("%s: the cancelled call's audit line could not be written", plan.correlation_id)


def _preview(plan, env: Mapping[str, str]) -> str | None:
    """What a write or edit changes, for the prompt (never sent to the agent)."""
    from lsp_bridge.approvals.preview import is_config_file, write_preview
    from lsp_bridge.core.config import user_config_path
    from lsp_bridge.mcp.file_tools import apply_edits

    if plan.tool not in ("write_file", "edit_file") or not plan.accesses or plan.accesses[0].resolved is None:
        return None
    path = plan.accesses[0].resolved.canonical
    before = _read_for_preview(path)
    try:
        if plan.tool == "write_file":
            after = plan.args["content"]
        elif before is None:
            return None
        else:
            after = apply_edits(before, plan.args["edits"], os.path.basename(path))
        user_file = user_config_path(env)
        return write_preview(path, before, after, config=is_config_file(path, user_file))
    except Exception:  # noqa: BLE001 - an edit that will fail anyway, an odd file: the prompt goes without a preview
        log.debug("no preview for %s", path, exc_info=True)
        return None


def _read_for_preview(path: str, limit: int = 1 << 20) -> str | None:
    data = read_regular(path, limit + 1)  # a FIFO the agent made there is not waited on
    if data is None or len(data) > limit or b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def _approval_form(plan, limit: TimeLimit) -> types.ElicitRequestFormParams:
    message = (f"Root Guard: an agent asks for access that needs your approval "
               f"(denied in {limit.seconds:g} s without an answer). {plan.describe()}")
    return types.ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)


def _elicited(result: types.ElicitResult) -> str:
    if result.action != "accept" or not result.content:
        return "deny"
    answer = result.content.get("answer")
    return answer if answer in ("allow_once", "allow_session") else "deny"


_TAGS = (("directories", "[DIR] "), ("files", "[FILE] "), ("links", "[LINK] "), ("other", "[OTHER] "))


def _listing_text(result: dict) -> str:
    """A listing's text content: ``[DIR] name`` lines, then ``[FILE]``, ``[LINK]``, ``[OTHER]``."""
    asks = frozenset(result["needs_approval"])
    blocks: list[str] = []
    for key, tag in _TAGS:
        names = result[key]
        if not names:
            continue
        if asks and not asks.isdisjoint(names):
            blocks.append("\n".join(f"{tag}{name} (needs approval)" if name in asks else tag + name for name in names))
        else:
            blocks.append(tag + ("\n" + tag).join(names))  # one join: no string per line
    if result.get("hidden"):
        blocks.append(f"({result['hidden']} entries hidden by policy)")
    if result.get("truncated"):
        blocks.append("(truncated: more entries than the listing limit)")
    return "\n".join(blocks) if blocks else "(empty directory)"


def _listing_structure(result: dict) -> dict:
    """A listing's structured content: its entries counted by kind (``counts``); the names are the
    text's, one per line (a name never holds a line break: the resolver refuses control characters,
    so such an entry is hidden). Names in both would double the reply and its parsing."""
    kinds = [key for key, _tag in _TAGS]
    structured = {key: value for key, value in result.items() if key not in kinds}
    structured["counts"] = {key: len(result[key]) for key in kinds}
    return structured


def _ok(result: dict) -> dict[str, Any]:
    """A ``CallToolResult`` in its wire form: the SDK validates it once on the way out, and a
    listing's thousand entries are not first built into models and dumped again."""
    if "text" in result:  # read_file: the file goes in the content, its metadata in structured content
        text = result.pop("text")
        shown = text if text is not None else f"binary file, {result.get('size')} bytes: not returned as text"
    elif "directories" in result:  # list_directory: one line per entry, as a person reads a listing
        shown = _listing_text(result)
        result = _listing_structure(result)
    else:
        shown = json.dumps(result, indent=2, ensure_ascii=False)
    return {"content": [{"type": "text", "text": shown}], "structuredContent": result, "isError": False,
            "resultType": "complete"}  # as CallToolResult dumps it; a handshake-era session drops it


def _error(err: ToolError) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{err.code}: {err.message}")],
        structured_content={"error": err.to_json()},
        is_error=True,
    )



