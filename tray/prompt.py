"""The approval prompt: one window showing the head of the queue.

Deny is the default button and Esc (or closing the window) denies. The prompt
appears without taking the keyboard focus, and for ``key_guard_ms`` after it
appears *and after every keystroke it swallows* the buttons are disabled and
keystrokes are dropped, so someone still typing (the Enter that sent the agent
its instruction, a held key) cannot answer it. Any click, scroll or key press on
the prompt pauses its countdown. A write shows what it would change: the rule
changes in words for a configuration file, then a unified diff.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tray.hooks import Hook
from tray.queue import Pending

DEFAULT_KEY_GUARD_MS = 600
PROMPT_WIDTH = 820
PREVIEW_HEIGHT = 260  # the diff scrolls inside this; the prompt fits a 1280×800 screen
ANSWER_BUTTONS = (
    ("deny", "&Deny"),
    ("allow_once", "Allow &once"),
    ("allow_session", "Allow for this &session"),
    ("always", "&Always allow"),
)
_GUARDED = (QEvent.Type.KeyPress, QEvent.Type.KeyRelease, QEvent.Type.ShortcutOverride)
_INTERACTION = (QEvent.Type.MouseButtonPress, QEvent.Type.Wheel, QEvent.Type.KeyPress)


class ApprovalPrompt(QDialog):
    """Shows one pending approval; calls ``answered(pending, answer)``."""

    def __init__(self, key_guard_ms: int = DEFAULT_KEY_GUARD_MS, clock=time.monotonic, parent: QWidget | None = None):
        super().__init__(parent, Qt.WindowType.Window | Qt.WindowType.WindowStaysOnTopHint)
        self.answered = Hook()  # (pending, answer)
        self.interacted = Hook()  # (pending): pause its countdown
        self.setWindowTitle("Root Guard — may the agent do this?")
        self.setModal(False)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)  # typing elsewhere stays elsewhere
        self.key_guard_ms = key_guard_ms
        self.clock = clock
        self.pending: Pending | None = None
        self.guarded = False
        self._build()
        self._guard_timer = QTimer(self)
        self._guard_timer.setSingleShot(True)
        self._guard_timer.timeout.connect(self._end_guard)
        self._tick = QTimer(self)
        self._tick.setInterval(200)
        self._tick.timeout.connect(self._show_countdown)
        for widget in [self, *self.findChildren(QWidget)]:
            widget.installEventFilter(self)

    # -- layout ---------------------------------------------------------------

    def _build(self) -> None:
        self.heading = QLabel()
        self.heading.setStyleSheet("font-size: 14pt; font-weight: bold;")
        self.queue_label = QLabel()
        self.queue_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.queue_label)

        self.who = QLabel()
        self.tool = QLabel()
        self.operation = QLabel()
        self.counter = QLabel()
        self.rule = QLabel()
        self.reason = QLabel()
        for label in (self.who, self.tool, self.operation, self.rule, self.reason):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.targets = QTreeWidget()
        self.targets.setColumnCount(4)
        self.targets.setHeaderLabels(["Canonical path", "Relative path", "Root", "Needs"])
        self.targets.setRootIsDecorated(False)
        self.targets.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.targets.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.targets.header().setStretchLastSection(False)
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.preview.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.preview.setMaximumHeight(PREVIEW_HEIGHT)
        self.preview_label = QLabel("Change:")
        form = QFormLayout()
        form.addRow("Who asks:", self.who)
        form.addRow("Tool:", self.tool)
        form.addRow("Operation:", self.operation)
        form.addRow("", self.counter)
        form.addRow("Targets:", self.targets)
        form.addRow(self.preview_label, self.preview)
        form.addRow("Rule:", self.rule)
        form.addRow("Reason:", self.reason)

        self.countdown = QLabel()
        self.error = QLabel()
        self.error.setStyleSheet("color: #b71c1c;")
        self.error.setWordWrap(True)
        self.error.hide()
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        row.addWidget(self.countdown, 1)
        for answer, text in ANSWER_BUTTONS:
            button = QPushButton(text)
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, a=answer: self._answer(a))
            self.buttons[answer] = button
            row.addWidget(button)
        self.deny_button = self.buttons["deny"]
        self.deny_button.setDefault(True)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addLayout(row)
        self.resize(PROMPT_WIDTH, self.sizeHint().height())

    # -- content ----------------------------------------------------------------

    def show_pending(self, pending: Pending | None, position: int = 1, total: int = 1) -> None:
        """Show ``pending`` (None hides the prompt). A new prompt re-arms the key guard."""
        if pending is None:
            self.pending = None
            self._tick.stop()
            self.hide()
            return
        if pending is not self.pending:
            self.pending = pending
            self._fill(pending)
            self._start_guard()
        self.queue_label.setText(f"{position} of {total} waiting" if total > 1 else "")
        self.counter.setText(f"×{pending.count} identical requests" if pending.count > 1 else "")
        self.counter.setVisible(pending.count > 1)
        self._show_countdown()
        self._tick.start()
        self._fit()
        if not self.isVisible():
            self.show()
            self.raise_()
        self.deny_button.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()
        self._fit()

    def _fit(self) -> None:
        """As tall as the content needs at the current width (wrapped labels included)."""
        width = max(self.width(), PROMPT_WIDTH)
        layout = self.layout()
        assert layout is not None  # set in __init__
        layout.activate()
        height = layout.heightForWidth(width) if layout.hasHeightForWidth() else -1
        self.resize(width, height if height > 0 else self.sizeHint().height())

    def _fill(self, pending: Pending) -> None:
        req, who = pending.request, pending.requester
        self.error.hide()
        batch = len(req.targets)
        self.heading.setText(
            f"{who.client} wants to {req.operation} {batch} files" if batch > 1 else f"{who.client} wants to {req.operation}"
        )
        pid = f", pid {who.pid}" if who.pid is not None else ""
        self.who.setText(f"{who.label}  (session {who.session}{pid})")
        self.tool.setText(req.tool)
        self.operation.setText(req.operation)
        self.targets.clear()
        for target in req.targets:
            relative = "(outside every root)" if target.relative is None else target.relative or "."
            self.targets.addTopLevelItem(QTreeWidgetItem([target.path, relative, target.root or "", target.need or "?"]))
        rows = min(max(len(req.targets), 2), 8)
        row_height = self.targets.sizeHintForRow(0) or self.fontMetrics().height() + 4
        self.targets.setFixedHeight(self.targets.header().sizeHint().height() + rows * row_height + 6)
        self.rule.setText(rule_line(req.rule, req.reason))
        has_preview = bool(req.preview)
        self.preview.setPlainText(req.preview or "")
        self.preview.setVisible(has_preview)
        self.preview_label.setVisible(has_preview)
        self.reason.setText(req.reason or "(none given)")
        self.buttons["always"].setToolTip(
            "Writes a [[paths]] rule to your user configuration file"
            if pending.can_always
            else "Unavailable: the request does not say which policy each target needs"
        )

    def _show_countdown(self) -> None:
        if self.pending is None:
            return
        countdown = self.pending.countdown
        left = countdown.remaining(self.clock())
        if countdown.paused:
            self.countdown.setText(f"Countdown paused ({left:.0f} s left)")
        else:
            self.countdown.setText(f"Denies in {max(0, round(left))} s")

    # -- key guard and interaction --------------------------------------------

    def _start_guard(self) -> None:
        self.guarded = True
        self._set_buttons_enabled(False)
        self._guard_timer.start(max(0, self.key_guard_ms))

    def _end_guard(self) -> None:
        self.guarded = False
        self._set_buttons_enabled(True)
        self.deny_button.setFocus(Qt.FocusReason.OtherFocusReason)

    def _set_buttons_enabled(self, enabled: bool) -> None:
        for answer, button in self.buttons.items():
            allowed = enabled and (answer != "always" or (self.pending is not None and self.pending.can_always))
            button.setEnabled(allowed)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if self.guarded and kind in _GUARDED:
            if kind == QEvent.Type.KeyPress:
                self._guard_timer.start(max(0, self.key_guard_ms))  # still typing: wait for a pause
            return True
        if kind in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) and getattr(event, "isAutoRepeat", lambda: False)():
            return True  # a key held since before the prompt never answers it
        if kind in _INTERACTION and self.pending is not None and not self.pending.countdown.paused:
            self.interacted.emit(self.pending)
            self._show_countdown()
        return False

    def keyPressEvent(self, event) -> None:
        if self.guarded or event.isAutoRepeat():
            return
        if event.key() == Qt.Key.Key_Escape:
            self._answer("deny")
            return
        super().keyPressEvent(event)

    def reject(self) -> None:
        """Esc or closing the window: deny (once the key guard is over)."""
        if self.pending is not None and not self.guarded:
            self._answer("deny")

    def closeEvent(self, event) -> None:
        """Closing the window denies (a click, not a keystroke: no guard).

        The close is always accepted (refusing it would cancel a quit or a logout);
        the next request in the queue brings the prompt back.
        """
        pending, self.pending = self.pending, None
        self._tick.stop()
        if pending is not None:
            self.answered.emit(pending, "deny")
        event.accept()

    def _answer(self, answer: str) -> None:
        if self.pending is None or self.guarded:
            return
        if answer == "always" and not self.pending.can_always:
            return
        self.answered.emit(self.pending, answer)


def rule_line(rule: str | None, reason: str) -> str:
    """The prompt's rule line: the winning rule, or why no rule applies (a protected target, the baseline)."""
    if rule:
        return rule
    text = reason or ""
    if "configuration file" in text or "protected" in text:
        return "none — protected target: " + text.split(";")[0]
    if "inside the host baseline" in text:
        return "none — inside the folders (the baseline)"
    if "outside every root" in text:
        return "none — outside the folders (the baseline)"
    return "none"
