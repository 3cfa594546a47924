"""The language server's LSP messages: each a thin call on the one ``RootGuardServer`` made here."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from lsp_bridge.core.settings import PROJECT_FILE_NAME
from lsp_bridge.lsp.server import RootGuardServer

if TYPE_CHECKING:
    from lsp_bridge.core.status import Operation

log = logging.getLogger("rootguard.lsp")

EXPLAIN = "rootguard/explain"
INVENTORY = "rootguard/inventory"
ACCESS = "rootguard/access"
ACKNOWLEDGE = "rootguard/acknowledge"
TRACE = "rootguard/trace"
MIGRATE_COMMAND = "rootguard.migrateConfig"
ACKNOWLEDGE_COMMAND = "rootguard.acknowledge"
WITHDRAW_COMMAND = "rootguard.withdrawAcknowledgement"

server = RootGuardServer()


def _fs_path(uri: str) -> str:
    """The path of a ``file:`` URI (callers check the scheme; pygls answers None for any other)."""
    path = to_fs_path(uri)
    if path is None:
        raise ValueError(f"not a file: URI: {uri!r}")
    return path


def _folders_from_initialize(params: types.InitializeParams) -> list[str]:
    if params.workspace_folders:
        return [_fs_path(f.uri) for f in params.workspace_folders if f.uri.startswith("file:")]
    if params.root_uri and params.root_uri.startswith("file:"):
        return [_fs_path(params.root_uri)]
    return []  # no folder: no root, never the server's working directory


@server.feature(types.INITIALIZE)
def on_initialize(ls: RootGuardServer, params: types.InitializeParams) -> None:
    ls.folders = _folders_from_initialize(params)
    options = params.initialization_options
    ls.report_view = isinstance(options, dict) and options.get("reportView") is True
    if params.client_info and params.client_info.name:
        ls.client_name = params.client_info.name[:200]
    log.info("initialize from %s with %d folder(s)", ls.client_name, len(ls.folders))


@server.feature(types.INITIALIZED)
async def on_initialized(ls: RootGuardServer, params: types.InitializedParams) -> None:
    # Compared with what was acknowledged: a window that starts wide warns like a live change.
    since = time.time_ns()
    change = ls.tracker.set_folders(ls.folders, initial=True)
    ls.send_status()  # what the user waits for: nothing else before it
    if change.widened:
        ls._start_inventory()
    ls._spawn(ls.after_first_status(change.widened, since))


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
async def on_folders_changed(ls: RootGuardServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    removed = {to_fs_path(f.uri) for f in params.event.removed}
    folders = [f for f in ls.folders if f not in removed]
    added = [_fs_path(f.uri) for f in params.event.added if f.uri.startswith("file:")]  # as at initialize
    folders += [path for path in added if path not in folders]
    ls.folders = folders
    done = ls._scans.begin()  # the person waits: the warm-up's next step waits too
    try:
        ls.apply_change(ls.tracker.set_folders(folders))
    finally:
        done()


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: RootGuardServer, *args) -> None:
    ls.stop_sending()
    if ls._window is not None:
        ls._window.remove()
    ls.shutdown_watches()
    if ls._tray is not None:
        ls._tray.close()


@server.feature(types.EXIT)
def on_exit(ls: RootGuardServer, *args) -> None:
    ls.stop_sending()  # an exit without shutdown: pygls closes stdout next


# -- configuration documents ---------------------------------------------------


def _is_config_document(ls: RootGuardServer, uri: str) -> bool:
    if not uri.startswith("file:"):
        return False
    path = _fs_path(uri)
    return os.path.basename(path) == PROJECT_FILE_NAME or path == ls.tracker.user_config_path()


def _publish_buffer(ls: RootGuardServer, uri: str) -> None:
    from lsp_bridge.lsp.convert import buffer_diagnostics

    if not _is_config_document(ls, uri):
        return
    doc = ls.workspace.get_text_document(uri)
    diags = buffer_diagnostics(ls.tracker, _fs_path(uri), doc.source)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: RootGuardServer, params: types.DidOpenTextDocumentParams) -> None:
    _publish_buffer(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(ls: RootGuardServer, params: types.DidChangeTextDocumentParams) -> None:
    _publish_buffer(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def on_save(ls: RootGuardServer, params: types.DidSaveTextDocumentParams) -> None:
    if _is_config_document(ls, params.text_document.uri):
        ls.apply_change(ls.tracker.reload())
        _publish_buffer(ls, params.text_document.uri)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def on_code_action(ls: RootGuardServer, params: types.CodeActionParams):
    from lsp_bridge.lsp.convert import migrate_edit

    uri = params.text_document.uri
    if not _is_config_document(ls, uri):
        return None
    doc = ls.workspace.get_text_document(uri)
    edit = migrate_edit(uri, _fs_path(uri), doc.source)
    if edit is None:
        return None
    related = [d for d in params.context.diagnostics if d.code == "deprecated-v1-boolean"]
    return [
        types.CodeAction(
            title="Migrate to version 2",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=related or None,
            edit=edit,
            is_preferred=True,
        )
    ]


@server.command(ACKNOWLEDGE_COMMAND)
def acknowledge_command(ls: RootGuardServer, *args: Any):
    """Accept the current union for this window's folders (any client: workspace/executeCommand)."""
    return ls.acknowledge()


@server.feature(ACKNOWLEDGE)
def on_acknowledge(ls: RootGuardServer, params: Any):
    return ls.acknowledge()


@server.command(WITHDRAW_COMMAND)
def withdraw_command(ls: RootGuardServer, *args: Any):
    """Withdraw the acknowledgement of this window's folders (any client: workspace/executeCommand)."""
    return ls.withdraw()


@server.command(MIGRATE_COMMAND)
async def migrate_command(ls: RootGuardServer, *args: Any):
    """Migrate one configuration file to version 2: ``arguments: [uri]`` (default: the user file)."""
    from lsp_bridge.lsp.convert import migrate_edit

    uri = args[0] if args else from_fs_path(ls.tracker.user_config_path())
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return {"applied": False, "reason": f"not a file: URI: {uri!r}"}
    path = to_fs_path(uri)
    if path is None:
        return {"applied": False, "reason": f"not a file: URI: {uri!r}"}
    doc = ls.workspace.text_documents.get(uri)
    text = doc.source if doc is not None else _read(path)
    edit = migrate_edit(uri, path, text) if text is not None else None
    if edit is None:
        return {"applied": False, "reason": "already version 2, invalid, or unreadable"}
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label="Migrate to version 2"))
    return {"applied": bool(result.applied)}


def _read(path: str) -> str | None:
    from lsp_bridge.core.config_files import read_config_text

    return read_config_text(path)[0]  # a regular file, never waited on, or None


# -- requests for the extension ------------------------------------------------


@server.feature(EXPLAIN)
def on_explain(ls: RootGuardServer, params: Any):
    from lsp_bridge.core import status as contract
    from lsp_bridge.core.policy import PolicyInputError
    from lsp_bridge.lsp.approval import param

    raw = param(params, "path")
    if raw is None:  # no path: the widening report
        tracker = ls.tracker
        return {
            "widened": tracker.widened,
            "acknowledged": not tracker.pending,
            "report": tracker.report(),
            "inventory": tracker.inventory,
        }
    if not isinstance(raw, str) or not raw:
        return contract.to_json(contract.RequestError("explain needs a path"))
    try:
        asked = contract.from_json(contract.ExplainParams, {"path": raw, "op": param(params, "op")})
    except TypeError as err:
        return contract.to_json(contract.RequestError(f"invalid request: {err}"))
    path = _fs_path(raw) if raw.startswith("file:") else raw
    ops: list[Operation] = [asked.op] if asked.op else ["read", "write", "delete"]
    policy = ls.tracker.policy
    try:
        decisions = [policy.decide(o, path) for o in ops]
    except PolicyInputError as err:
        return contract.to_json(contract.RequestError(str(err)))
    return contract.to_json(
        contract.ExplainResult(
            decisions[0].path,
            [contract.ExplainDecision(o, d.decision, d.rule, d.reason) for o, d in zip(ops, decisions, strict=True)],
        )
    )


@server.feature(INVENTORY)
def on_inventory(ls: RootGuardServer, params: Any):
    from lsp_bridge.core import status as contract

    inventory = ls.tracker.inventory
    return contract.to_json(contract.from_json(contract.Inventory, inventory)) if inventory is not None else None


@server.feature(ACCESS)
async def on_access(ls: RootGuardServer, params: Any):
    """Decide an access for a tool; request-level ones go to a person. Malformed params: denied."""
    from lsp_bridge.core import status as contract
    from lsp_bridge.lsp.approval import decide_access, param

    raw = {k: param(params, k) for k in ("path", "op", "dest", "tool") if param(params, k) is not None}
    try:
        contract.from_json(contract.AccessParams, raw)
    except TypeError as err:
        return contract.to_json(contract.AccessResult("deny", None, None, f"invalid request: {err}"))
    return contract.to_json(contract.from_json(contract.AccessResult, await decide_access(ls, params)))


@server.feature(TRACE)
async def on_trace(ls: RootGuardServer, params: Any):
    """Trace a command (``rootguard trace``) under this window's roots, or under ``roots`` when given.

    Params: ``{"command": [program, arg...], "roots": [path...]?}``. Answers the
    ``rootguard trace --json`` object, or ``{"error": text, "exit": 2|125}``.
    """
    from lsp_bridge.core.session import open_session
    from lsp_bridge.lsp.approval import param
    from lsp_bridge.trace.run import TraceError, TraceUnavailable, run_trace

    command = param(params, "command")
    roots = param(params, "roots")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        return {"error": "trace needs a command: a list of non-empty strings", "exit": 2}
    if roots is not None:
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            return {"error": "roots must be a list of absolute directories", "exit": 2}
        paths = [str(to_fs_path(r) or "") if r.startswith("file:") else r for r in roots]
        if not all(os.path.isabs(p) and os.path.isdir(p) for p in paths):
            return {"error": "roots must be absolute existing directories", "exit": 2}
        session = open_session(paths, ls.tracker.env)
    else:
        session = ls.tracker.session
    if not session.folders:
        return {"error": "no workspace folder to trace under", "exit": 2}
    try:
        result = await asyncio.to_thread(run_trace, session, command, capture=True)
    except TraceUnavailable as err:
        return {"error": str(err), "exit": 125}
    except TraceError as err:
        return {"error": str(err), "exit": 2}
    return result.to_json()
