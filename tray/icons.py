"""Tray icon states and their images (``icons/tray-<state>.svg`` and ``-<size>.png``).

The state follows a fixed precedence, from what needs the user most:

    pending       an approval waits for an answer
    widened       a window's union widened and the user has not acknowledged it
    clear         editors are connected, nothing to report
    disconnected  no editor (or MCP server) is connected

``python -m tray.icons`` re-renders the PNGs from the SVG sources.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

STATES = ("clear", "widened", "pending", "disconnected")
SIZES = (16, 22, 24, 32, 48, 64)
ICONS_ENV = "ROOTGUARD_ICONS"

TOOLTIPS = {
    "clear": "all clear",
    "widened": "a window's union widened",
    "pending": "approval pending",
    "disconnected": "no editor connected",
}
COLOURS = {"clear": "#2e7d32", "widened": "#f9a825", "pending": "#1565c0", "disconnected": "#9e9e9e"}


def icon_state(sessions: int, any_widened: bool, pending: int) -> str:
    """The icon to show, by precedence: pending > widened > clear > disconnected."""
    if pending > 0:
        return "pending"
    if sessions == 0:
        return "disconnected"
    if any_widened:
        return "widened"
    return "clear"


def tooltip(state: str, sessions: int, pending: int, notes: str = "") -> str:
    """The tray's one line. ``notes``: what the windows still show (an acknowledged widening,
    warnings); with notes the state is never called "all clear"."""
    windows = f"{sessions} window{'s' if sessions != 1 else ''}"
    waiting = f", {pending} approval{'s' if pending != 1 else ''} waiting" if pending else ""
    said = notes if state == "clear" and notes else TOOLTIPS[state]
    return f"Root Guard — {said} ({windows}{waiting})"


def notes_of(statuses) -> str:
    """What connected windows show beside no unacknowledged widening: acknowledged widenings and warnings."""
    acknowledged = warnings = 0
    for status in statuses:
        if not isinstance(status, dict):
            continue
        if status.get("widened") is True:
            acknowledged += 1
        items = status.get("warnings")
        warnings += sum(1 for w in items if isinstance(w, dict) and w.get("code") != "union-widened") \
            if isinstance(items, list) else 0
    parts = []
    if acknowledged:
        parts.append(f"{acknowledged} acknowledged widening{'s' if acknowledged != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return ", ".join(parts)


def icons_dir() -> Path:
    """``$ROOTGUARD_ICONS``, else the repository's ``icons/`` next to this package."""
    override = os.environ.get(ICONS_ENV)
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parent.parent / "icons"
    installed = Path(sys.prefix) / "share" / "rootguard" / "icons"  # a wheel's data files
    return checkout if checkout.is_dir() or not installed.is_dir() else installed


def load_icon(state: str):
    """A QIcon with every PNG size (the SVG, or a plain coloured disc, when PNGs are missing)."""
    from PySide6.QtGui import QIcon


    base = icons_dir()
    icon = QIcon()
    for size in SIZES:
        png = base / f"tray-{state}-{size}.png"
        if png.is_file():
            icon.addFile(str(png))
    if icon.isNull():
        svg = base / f"tray-{state}.svg"
        icon = QIcon(str(svg)) if svg.is_file() else _disc(COLOURS[state])
    return icon


def _disc(colour: str):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap

    pixmap = QPixmap(64, 64)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor(colour))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(4, 4, 56, 56)
    painter.end()
    return QIcon(pixmap)


def render_pngs(directory: Path | None = None) -> list[Path]:
    """Render every ``tray-<state>.svg`` at every size (needs a QGuiApplication)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    base = directory or icons_dir()
    written = []
    for state in STATES:
        renderer = QSvgRenderer(str(base / f"tray-{state}.svg"))
        if not renderer.isValid():
            raise ValueError(f"{base / f'tray-{state}.svg'}: not a valid SVG")
        for size in SIZES:
            image = QImage(size, size, QImage.Format.Format_ARGB32)
            image.fill(Qt.GlobalColor.transparent)
            painter = QPainter(image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            renderer.render(painter)
            painter.end()
            out = base / f"tray-{state}-{size}.png"
            if not image.save(str(out)):
                raise OSError(f"{out}: cannot write")
            written.append(out)
    return written


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841
    for path in render_pngs():
        print(path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
