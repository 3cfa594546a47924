"""The tray app: the icon and its menu, the main window, the prompt, wired to the broker."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from lsp_bridge.core.grants import GrantError, always_rules, write_always_rule
from tray.broker import Broker
from tray.icons import STATES, icon_state, load_icon, notes_of, tooltip
from tray.prompt import DEFAULT_KEY_GUARD_MS, ApprovalPrompt
from tray.queue import Pending
from tray.sessions import describe
from tray.window import ANSWER_TEXT, MainWindow, clock_text, paths_text

NO_TRAY = (
    "No system tray is available on this desktop (on GNOME, install and enable the "
    "AppIndicator extension), so Root Guard runs in this window instead. "
    "Closing it quits the tray: approvals then fall back to the editor."
)
MENU_LINES = 8  # lines per section in a session's submenu
RECENT_IN_MENU = 10
MENU_TEXT_PX = 560  # menu entries are elided to this width: a menu fits a 1280×800 screen


class TrayApp(QObject):
    """Owns the tray icon, the main window and the prompt; answers through the broker."""

    def __init__(
        self,
        broker: Broker,
        *,
        user_config: str,
        key_guard_ms: int = DEFAULT_KEY_GUARD_MS,
        tray_available: bool | None = None,
    ):
        super().__init__()
        self.broker = broker
        self.user_config = user_config
        self.icons = {state: load_icon(state) for state in STATES}
        self.state: str | None = None
        self.quitting = False
        self._refresh_due = False
        self.window = MainWindow(broker)
        self.window.widened_icon = self.icons["widened"]
        self.prompt = ApprovalPrompt(key_guard_ms, clock=broker.queue.clock)
        self.prompt.setWindowIcon(self.icons["pending"])
        self.prompt.answered.connect(self.answer)
        self.prompt.interacted.connect(broker.pause)
        self.window.answerRequested.connect(self.show_prompt)
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self.build_menu)
        available = QSystemTrayIcon.isSystemTrayAvailable() if tray_available is None else tray_available
        self.tray: QSystemTrayIcon | None = None
        if available:
            self.tray = QSystemTrayIcon(self)
            self.tray.setContextMenu(self.menu)
            self.tray.activated.connect(self._activated)
        broker.sessionsChanged.connect(self.schedule_refresh)
        broker.queueChanged.connect(self.schedule_refresh)
        broker.widened.connect(self.notify_widened)
        self.refresh()
        if self.tray is not None:
            self.tray.show()
        else:
            print(f"rootguard tray: {NO_TRAY}", file=sys.stderr)
            self.window.quit_on_close = self.quit
            self.window.show_banner(NO_TRAY)
            self.window.present()

    # -- state --------------------------------------------------------------

    def schedule_refresh(self) -> None:
        """Refresh once the current burst of socket events is handled."""
        if not self._refresh_due:
            self._refresh_due = True
            QTimer.singleShot(0, self.refresh)

    def refresh(self) -> None:
        self._refresh_due = False
        queue, registry = self.broker.queue, self.broker.registry
        waiting = len(queue.pending)
        self.state = icon_state(len(registry), registry.any_widened, waiting)
        icon = self.icons[self.state]
        self.window.setWindowIcon(icon)
        if self.tray is not None:
            self.tray.setIcon(icon)
            self.tray.setToolTip(tooltip(self.state, len(registry), waiting, self._notes()))
        self.window.refresh()
        self._update_prompt()

    def _notes(self) -> str:
        return notes_of(s.status for s in self.broker.registry.sessions())

    def _update_prompt(self) -> None:
        pending = self.broker.queue.pending
        self.prompt.show_pending(pending[0] if pending else None, 1, len(pending))

    def show_prompt(self) -> None:
        pending = self.broker.queue.pending
        if pending:
            self.prompt.show_pending(pending[0], 1, len(pending))

    # -- answers ------------------------------------------------------------

    def answer(self, pending: Pending, answer: str) -> None:
        """The user's answer; "always" first writes the rules (and stays open if that fails)."""
        rules: tuple[str, ...] = ()
        if answer == "always":
            try:
                wanted = [(t.path, t.need) for t in pending.request.targets if t.need is not None]
                fields = always_rules(wanted, tool=pending.request.tool, client=pending.requester.client)
                rules = tuple(write_always_rule(self.user_config, f) for f in fields)
            except (GrantError, OSError) as exc:
                self.prompt.show_error(f"Could not save the rule: {exc}")
                return
        self.broker.answer(pending, answer, rules)

    # -- notifications ------------------------------------------------------

    def notify_widened(self, conn: int) -> None:
        info = self.broker.registry.get(conn)
        if info is None:
            return
        title = "Root Guard: union widened"
        text = f"{info.label}: {info.summary}"
        if self.tray is not None:
            self.tray.showMessage(title, text, QSystemTrayIcon.MessageIcon.Warning, 15000)
        else:
            self.window.statusBar().showMessage(f"{title} — {text}")

    def _activated(self, reason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            if self.broker.queue.pending:
                self.show_prompt()
            else:
                self.window.present()

    # -- menu ---------------------------------------------------------------

    def build_menu(self) -> None:
        menu = self.menu
        menu.clear()
        queue, registry = self.broker.queue, self.broker.registry
        header = menu.addAction(tooltip(self.state or "disconnected", len(registry), len(queue.pending), self._notes()))
        header.setEnabled(False)
        if queue.pending:
            action = menu.addAction(f"Answer {len(queue.pending)} pending approval{'s' if len(queue.pending) > 1 else ''}…")
            _bold(action)
            action.triggered.connect(self.show_prompt)
        menu.addSeparator()
        if not len(registry):
            menu.addAction("No editor window connected").setEnabled(False)
        for info in registry.sessions():
            self._session_menu(menu, info)
        menu.addSeparator()
        recent = menu.addMenu("Recent decisions")
        for r in list(queue.recent)[:RECENT_IN_MENU]:
            text = f"{clock_text(r.when)}  {ANSWER_TEXT.get(r.answer, r.answer)}: {r.operation} {paths_text(r.paths)}"
            _add(recent, text)
        if not queue.recent:
            recent.addAction("none yet").setEnabled(False)
        missed = menu.addAction(f"Missed requests ({len(queue.missed)})…")
        missed.triggered.connect(self.window.show_missed)
        menu.addAction("Open Root Guard…").triggered.connect(self.window.present)
        menu.addSeparator()
        menu.addAction("Quit").triggered.connect(self.quit)

    def _session_menu(self, menu: QMenu, info) -> None:
        sub = menu.addMenu(_elided(menu, f"{info.label} — {info.summary}", Qt.TextElideMode.ElideRight))
        sub.setToolTipsVisible(True)
        if info.widened:
            sub.setIcon(self.icons["widened"])
        for section in describe(info):
            if not section.lines:
                continue
            _bold(sub.addAction(section.title)).setEnabled(False)
            for line in section.lines[:MENU_LINES]:
                _add(sub, "    " + line).triggered.connect(lambda _=False, c=info.conn: self.window.show_session(c))
            if len(section.lines) > MENU_LINES:
                sub.addAction(f"    … {len(section.lines) - MENU_LINES} more").triggered.connect(
                    lambda _=False, c=info.conn: self.window.show_session(c)
                )
        sub.addSeparator()
        if info.widened:
            sub.addAction("Acknowledge widening").triggered.connect(lambda _=False, c=info.conn: self._acknowledge(c))
        if info.withdrawable:
            sub.addAction("Withdraw acknowledgement").triggered.connect(
                lambda _=False, c=info.conn: self.broker.withdraw_acknowledgement(c))
        sub.addAction("Show details…").triggered.connect(lambda _=False, c=info.conn: self.window.show_session(c))

    def _acknowledge(self, conn: int) -> None:
        """Acknowledged here: the session records the union, the tray remembers it."""
        self.broker.acknowledge(conn)
        self.refresh()

    def quit(self) -> None:
        """Deny what is pending (requesters learn at once), then leave."""
        from PySide6.QtWidgets import QApplication

        if self.quitting:
            return
        self.quitting = True
        self.broker.stop("the tray quit")
        self.prompt.show_pending(None)
        QApplication.quit()


def _elided(widget, text: str, mode=Qt.TextElideMode.ElideMiddle) -> str:
    """``text`` cut to fit ``MENU_TEXT_PX`` (in the middle by default: paths keep their start and end)."""
    return widget.fontMetrics().elidedText(text, mode, MENU_TEXT_PX)


def _add(menu: QMenu, text: str):
    """A menu entry elided to the menu width; the whole text in its tooltip."""
    action = menu.addAction(_elided(menu, text))
    if action.text() != text:
        action.setToolTip(text.strip())
    return action


def _bold(action):
    font = QFont(action.font())
    font.setBold(True)
    action.setFont(font)
    return action
