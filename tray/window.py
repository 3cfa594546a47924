"""The tray's main window: sessions and what they expose, approvals, decisions, missed requests."""

from __future__ import annotations

import html
import time
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tray.broker import Broker
from tray.hooks import Hook
from tray.queue import MissedRecord
from tray.sessions import describe

ANSWER_TEXT = {
    "allow_once": "allowed once",
    "allow_session": "allowed for the session",
    "always": "always allowed",
    "deny": "denied",
    "timeout": "timed out (denied)",
    "acknowledged": "widening acknowledged",
    "withdrawn": "acknowledgement withdrawn",
}


def clock_text(when: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))


def paths_text(paths: tuple[str, ...]) -> str:
    if not paths:
        return ""
    return paths[0] if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more)"


class MainWindow(QMainWindow):
    """Everything the tray knows, in tabs. ``answerRequested`` opens the prompt."""

    def __init__(self, broker: Broker, parent: QWidget | None = None):
        super().__init__(parent)
        self.answerRequested = Hook()
        self.broker = broker
        self.quit_on_close: Callable[[], None] | None = None  # a callable when closing this window quits the tray
        self.widened_icon = None  # set by the app: marks windows whose union widened
        self.setWindowTitle("Root Guard")
        self.resize(980, 620)
        self.setMinimumSize(640, 400)
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("background: #fff3cd; color: #5d4200; padding: 8px; border: 1px solid #e0c36b;")
        self.banner.hide()
        self.tabs = QTabWidget()
        self.tabs.addTab(self._sessions_tab(), "Windows")
        self.tabs.addTab(self._approvals_tab(), "Approvals")
        self.tabs.addTab(self._recent_tab(), "Recent decisions")
        self.tabs.addTab(self._missed_tab(), "Missed requests")
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addWidget(self.banner)
        layout.addWidget(self.tabs)
        self.setCentralWidget(central)
        self.refresh()

    # -- tabs -------------------------------------------------------------------

    def _sessions_tab(self) -> QWidget:
        self.session_list = QListWidget()
        self.session_list.setWordWrap(True)
        self.session_list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.session_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.session_list.currentItemChanged.connect(lambda *_: self._show_details())
        self.details = QTextBrowser()
        self.acknowledge = QPushButton("Acknowledge widening")
        self.acknowledge.clicked.connect(self._acknowledge)
        self.withdraw = QPushButton("Withdraw acknowledgement")
        self.withdraw.clicked.connect(self._withdraw)
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.session_list)
        column.addWidget(self.acknowledge)
        column.addWidget(self.withdraw)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.details)
        split.setSizes([330, 650])
        return split

    def _approvals_tab(self) -> QWidget:
        self.pending_list = QListWidget()
        answer = QPushButton("Answer…")
        answer.clicked.connect(lambda: self.answerRequested.emit())
        return _with_buttons(self.pending_list, answer)

    def _recent_tab(self) -> QWidget:
        self.recent = _tree(["Time", "Who", "Tool", "Operation", "Paths", "Answer"])
        return self.recent

    def _missed_tab(self) -> QWidget:
        self.missed = _tree(["Time", "Who", "Tool", "Operation", "Paths", "Rule", "Why"])
        dismiss = QPushButton("Dismiss")
        dismiss.clicked.connect(self._dismiss_missed)
        return _with_buttons(self.missed, dismiss)

    # -- content ----------------------------------------------------------------

    def show_banner(self, text: str) -> None:
        self.banner.setText(text)
        self.banner.show()

    def show_session(self, conn: int) -> None:
        for row in range(self.session_list.count()):
            if self.session_list.item(row).data(Qt.ItemDataRole.UserRole) == conn:
                self.session_list.setCurrentRow(row)
        self.tabs.setCurrentIndex(0)
        self.present()

    def show_missed(self) -> None:
        self.tabs.setCurrentIndex(3)
        self.present()

    def present(self) -> None:
        self.fit_screen()
        self.show()
        self.raise_()
        self.activateWindow()

    def fit_screen(self) -> None:
        """Never larger than the screen's free area (1280×800 and up): content scrolls instead."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        area = screen.availableGeometry()
        width = min(self.width(), area.width() - 40)
        height = min(self.height(), area.height() - 60)
        self.setMaximumSize(area.width(), area.height())
        self.resize(width, height)
        frame = self.frameGeometry()
        frame.moveCenter(area.center())
        self.move(max(area.left(), frame.left()), max(area.top(), frame.top()))

    def refresh(self) -> None:
        self._refresh_sessions()
        self._refresh_pending()
        self._refresh_records()

    def _refresh_sessions(self) -> None:
        current = self.session_list.currentItem()
        keep = current.data(Qt.ItemDataRole.UserRole) if current else None
        self.session_list.clear()
        for info in self.broker.registry.sessions():
            item = QListWidgetItem(f"{info.label}\n{info.summary}")
            item.setData(Qt.ItemDataRole.UserRole, info.conn)
            item.setData(Qt.ItemDataRole.UserRole + 1, info.widened)
            if info.widened and self.widened_icon is not None:
                item.setIcon(self.widened_icon)
            item.setToolTip(f"session {info.session}, pid {info.pid}")
            self.session_list.addItem(item)
            if info.conn == keep:
                self.session_list.setCurrentItem(item)
        if self.session_list.currentItem() is None and self.session_list.count():
            self.session_list.setCurrentRow(0)
        self._show_details()

    def _show_details(self) -> None:
        item = self.session_list.currentItem()
        info = self.broker.registry.get(item.data(Qt.ItemDataRole.UserRole)) if item else None
        self.acknowledge.setEnabled(bool(info and info.widened))
        self.withdraw.setEnabled(bool(info and info.withdrawable))
        if info is None:
            self.details.setHtml("<p>No editor window is connected.</p>")
            return
        parts = [f"<h2>{html.escape(info.label)}</h2><p>{html.escape(info.summary)}</p>"]
        for section in describe(info):
            parts.append(f"<h3>{html.escape(section.title)}</h3>")
            if section.lines:
                parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in section.lines) + "</ul>")
            else:
                parts.append("<p><i>none</i></p>")
        self.details.setHtml("".join(parts))

    def _refresh_pending(self) -> None:
        self.pending_list.clear()
        for pending in self.broker.queue.pending:
            req = pending.request
            count = f"  ×{pending.count}" if pending.count > 1 else ""
            self.pending_list.addItem(
                f"{pending.requester.label}: {req.tool} {req.operation} {paths_text(req.paths)}{count}"
            )
        self.tabs.setTabText(1, f"Approvals ({len(self.broker.queue.pending)})" if self.broker.queue.pending else "Approvals")

    def _refresh_records(self) -> None:
        self.recent.clear()
        for r in self.broker.queue.recent:
            count = f" ×{r.count}" if r.count > 1 else ""
            self.recent.addTopLevelItem(QTreeWidgetItem(
                [clock_text(r.when), r.who, r.tool, r.operation, paths_text(r.paths), ANSWER_TEXT.get(r.answer, r.answer) + count]
            ))
        self.missed.clear()
        for m in self.broker.queue.missed:
            item = QTreeWidgetItem(
                [clock_text(m.when), m.who, m.tool, m.operation, paths_text(m.paths), m.rule or "", m.why]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, m)
            item.setToolTip(4, "\n".join(m.paths))
            self.missed.addTopLevelItem(item)
        missed = len(self.broker.queue.missed)
        self.tabs.setTabText(3, f"Missed requests ({missed})" if missed else "Missed requests")

    # -- actions ----------------------------------------------------------------

    def _acknowledge(self) -> None:
        item = self.session_list.currentItem()
        if item is not None:
            self.broker.acknowledge(item.data(Qt.ItemDataRole.UserRole))

    def _withdraw(self) -> None:
        item = self.session_list.currentItem()
        if item is not None:
            self.broker.withdraw_acknowledgement(item.data(Qt.ItemDataRole.UserRole))

    def _dismiss_missed(self) -> None:
        item = self.missed.currentItem()
        record = item.data(0, Qt.ItemDataRole.UserRole) if item else None
        if isinstance(record, MissedRecord):
            self.broker.dismiss_missed(record)
            self._refresh_records()

    def closeEvent(self, event) -> None:
        if self.quit_on_close is not None:
            self.quit_on_close()
        event.accept()


def _tree(headers: list[str]) -> QTreeWidget:
    tree = QTreeWidget()
    tree.setColumnCount(len(headers))
    tree.setHeaderLabels(headers)
    tree.setRootIsDecorated(False)
    return tree


def _with_buttons(main: QWidget, *buttons: QPushButton) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.addWidget(main)
    row = QHBoxLayout()
    row.addStretch(1)
    for button in buttons:
        row.addWidget(button)
    layout.addLayout(row)
    return box
