"""What the person sees of a window: the status, the widening warning and its report, acknowledgements,
configuration diagnostics and work-done progress (``WindowState``, a layer of ``RootGuardServer``)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_bridge.lsp.server_state import ServerState

if TYPE_CHECKING:
    from lsp_bridge.core.status import Approver

log = logging.getLogger("rootguard.lsp")

STATUS = "rootguard/status"
CLOSE_ACTION = "Close"
WITHDRAW_ACTION = "Withdraw acknowledgement"
SHOW_REPORT = "Show report"
ACKNOWLEDGE_ACTION = "Acknowledge"


class WindowState(ServerState):
    def send_status(self) -> None:
        from lsp_bridge.core.status import to_json

        note = self._watcher.limit_note if self._watcher is not None else None
        status = to_json(self.tracker.status(self.approver(), watch_limit=note or None))
        problem = self.publish_window(status)  # first: a failure is a warning in this very status
        if problem is not None:
            status["warnings"].append({"severity": "warning", "code": "window-unpublished", "message": problem})
        self.protocol.notify(STATUS, status)
        if self._tray is not None:
            self._tray.publish_status(status)

    def publish_window(self, status: dict) -> str | None:
        """Where the agents' hooks find this window's folders (``lsp_bridge/agents/windows.py``);
        why it could not be published, else None."""
        from lsp_bridge.approvals.runtime import RuntimeDirError

        try:
            if self._window is None:
                import atexit

                from lsp_bridge.agents.windows import Publisher

                self._window = Publisher(self.tracker.session_id, self.client_name)
                atexit.register(self._window.remove)
            self._window.publish(status, status.get("agents") or ())
        except (OSError, ValueError, RuntimeDirError) as err:  # the editor keeps working
            log.warning("cannot publish this window for the agents' hooks: %s", err)
            return (f"Root Guard: this window is not published for the agents' hooks ({err}); until it is, an "
                    "agent's calls are blocked (a directory that cannot be trusted) or bound to its project folder")
        return None

    def approver(self) -> Approver:
        """Who answers request-level accesses now: the tray, the editor, or nobody."""
        if self._tray is not None and self._tray.connected:
            return "tray"
        window = self.client_capabilities.window
        return "editor" if window is not None and window.show_message is not None else "none"

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def announce_widening(self, line: str) -> None:
        """The one line, with actions where the client has them; then the full report to the log.

        The line goes out first, here and now: it is what the person waits for. The status
        sent after it and the report for the log (built on the
        loop's next turn) follow it; the answer to the actions is awaited by a task."""
        window = self.client_capabilities.window
        if window is None or window.show_message is None:
            self.warn(line)
        else:
            params = types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=line,
                actions=[types.MessageActionItem(title=SHOW_REPORT), types.MessageActionItem(title=ACKNOWLEDGE_ACTION)],
            )
            try:
                answer = asyncio.wrap_future(self.window_show_message_request(params))
            except Exception as err:  # the request could not be sent
                self._warn_instead(line, err)
            else:
                self._spawn(self._act_on_widening_answer(answer, line))
        loop = asyncio.get_running_loop()
        loop.call_soon(self._log_report)
        loop.run_in_executor(None, self._remember_window)

    def _remember_window(self) -> None:
        try:
            self.tracker.remember_window()  # starting these folders again is "reopening" them
        except OSError as err:
            log.info("could not note the window as warned about: %s", err)

    def _warn_instead(self, line: str, err: Exception) -> None:
        """The widening's request failed: the plain warning, never nothing."""
        log.info("showMessageRequest failed (%s); sending showMessage", err)
        self.warn(line)

    def _log_report(self) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=self.tracker.report()))

    async def _act_on_widening_answer(self, answer: asyncio.Future, line: str) -> None:
        try:
            choice = await answer
        except Exception as err:  # the client could not show it
            self._warn_instead(line, err)
            return
        title = getattr(choice, "title", None)
        if title == ACKNOWLEDGE_ACTION:
            self.acknowledge()
        elif title == SHOW_REPORT:
            await self.show_report()

    async def show_report(self) -> None:
        """The whole report, once, in the best view the client has.

        A client with its own report view (VS Code's webview: ``initializationOptions.reportView``)
        shows it itself: nothing here. A client that opens documents gets the report as one; a client
        with ``window/showMessageRequest`` only (Neovim 0.7) gets the whole report as one request, with
        Acknowledge or Withdraw acknowledgement as its actions; any other client a message."""
        if self.report_view:
            return
        text = self.tracker.report()
        window = self.client_capabilities.window
        if window is not None and window.show_document is not None and window.show_document.support:
            from lsp_bridge.lsp.acknowledgements import write_report

            try:
                path = write_report(self.tracker.session_id, text)
                result = await self.window_show_document_async(
                    types.ShowDocumentParams(uri=from_fs_path(path), take_focus=True)
                )
                if result.success:
                    return
            except Exception:
                log.exception("showDocument failed")
        if window is not None and window.show_message is not None:
            action = ACKNOWLEDGE_ACTION if self.tracker.pending else WITHDRAW_ACTION if self.tracker.withdrawable else None
            actions = [types.MessageActionItem(title=t) for t in (action, CLOSE_ACTION) if t]
            try:
                choice = await asyncio.wrap_future(self.window_show_message_request(types.ShowMessageRequestParams(
                    type=types.MessageType.Info, message=text, actions=actions)))
            except Exception as err:
                log.info("showMessageRequest failed (%s); sending showMessage", err)
            else:
                title = getattr(choice, "title", None)
                if title == ACKNOWLEDGE_ACTION:
                    self.acknowledge()
                elif title == WITHDRAW_ACTION:
                    self.withdraw()
                return
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=text))

    def acknowledge(self) -> dict:
        """Record the current union as accepted for this window's folders."""
        try:
            self.tracker.acknowledge()
        except OSError as err:
            message = f"Root Guard: could not record the acknowledgement: {err}"
            self.warn(message)
            return {"acknowledged": False, "reason": message}
        if self._inventory_task is not None:
            self._inventory_task.cancel()
        self.send_status()
        union = self.tracker.union.paths
        self.window_log_message(
            types.LogMessageParams(type=types.MessageType.Info, message="Root Guard: acknowledged " + ", ".join(union))
        )
        return {"acknowledged": True, "union": list(union)}

    def withdraw(self) -> dict:
        """Take back this window's acknowledgement: it is measured and warned about again."""
        if not self.tracker.withdrawable:
            return {"withdrawn": False, "reason": "no acknowledgement of these folders to withdraw"}
        try:
            change = self.tracker.withdraw()
        except OSError as err:
            message = f"Root Guard: could not withdraw the acknowledgement: {err}"
            self.warn(message)
            return {"withdrawn": False, "reason": message}
        self.window_log_message(types.LogMessageParams(
            type=types.MessageType.Info, message="Root Guard: acknowledgement withdrawn for " + ", ".join(self.folders)))
        self.apply_change(change)
        return {"withdrawn": True, "reference": list(self.tracker.status().reference)}

    def publish_config_diagnostics(self) -> None:
        from lsp_bridge.lsp.convert import disk_hints, group_by_file

        grouped = group_by_file([*self.tracker.session.diagnostics, *disk_hints(self.tracker)])
        for path in self._published - set(grouped):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=[]))
        for path, diags in grouped.items():
            if self.workspace.text_documents.get(from_fs_path(path)) is None:
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=diags))
        self._published = set(grouped)

    # -- progress ------------------------------------------------------------

    async def _progress_begin(self, title: str):
        window = self.client_capabilities.window
        if not (window and window.work_done_progress):
            return None
        token = f"rootguard-inventory-{uuid.uuid4().hex[:8]}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:
            return None
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=False))
        return token

    def _progress_report(self, token, message: str) -> None:
        self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))

    def _progress_end(self, token) -> None:
        if token:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
