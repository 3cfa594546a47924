"""``rootguard tray`` / ``python -m tray``: start the tray, or install its autostart entry."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys

from lsp_bridge.approvals.runtime import socket_path
from lsp_bridge.core.settings import DEFAULT_APPROVAL_TIMEOUT as DEFAULT_TIMEOUT

AUTOSTART_NAME = "rootguard-tray.desktop"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rootguard tray",
        description="The Root Guard tray: what every editor window exposes, and approvals for agent file access.",
    )
    p.add_argument("--install-autostart", action="store_true",
                   help=f"write $XDG_CONFIG_HOME/autostart/{AUTOSTART_NAME} and exit")
    p.add_argument("--socket", metavar="PATH", help="listen on PATH instead of the per-user socket")
    p.add_argument("--show-window", action="store_true", help="open the main window at start")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=("approval countdown (default: [approvals] timeout_seconds of the user configuration, "
                         f"else {DEFAULT_TIMEOUT:g})"))
    # Hidden switches for tests and benchmarks.
    p.add_argument("--headless", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--auto-answer", choices=("allow_once", "deny"), help=argparse.SUPPRESS)
    p.add_argument("--key-guard-ms", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--no-tray", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.install_autostart:
        return install_autostart()
    if args.auto_answer and not args.socket:  # never on the user's real socket
        print("rootguard tray: --auto-answer needs --socket", file=sys.stderr)
        return 2
    if args.timeout is not None and not 0 < args.timeout <= 3600:
        print("rootguard tray: --timeout must be > 0 and <= 3600", file=sys.stderr)
        return 2
    if not args.headless and not _has_display():
        print("rootguard tray: no graphical session (DISPLAY and WAYLAND_DISPLAY are unset)", file=sys.stderr)
        return 1
    path = os.path.abspath(args.socket) if args.socket else socket_path()
    return run(args, path)


def _has_display() -> bool:
    """Qt aborts without a display; say so instead (offscreen/other platforms pass)."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "xcb").split(":")[0] not in ("xcb", "wayland"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run(args, path: str) -> int:
    from tray.broker import BrokerError, acquire_single_instance

    try:
        lock = acquire_single_instance(path)
    except (OSError, RuntimeError) as exc:
        print(f"rootguard tray: {exc}", file=sys.stderr)
        return 1
    if lock is None:
        print(f"rootguard tray: already running for this user (socket {path})")
        return 0
    try:
        app = _application(args.headless)
        broker = _broker(args, path)
        try:
            broker.start()
        except (BrokerError, OSError) as exc:
            print(f"rootguard tray: {exc}", file=sys.stderr)
            return 1
        ui = None if args.headless else _ui(args, broker)
        _quit_on_signals(app, ui.quit if ui else lambda: (broker.stop(), app.quit()))
        app.aboutToQuit.connect(broker.stop)
        print(f"rootguard tray: listening on {path}", file=sys.stderr, flush=True)
        return app.exec()
    finally:
        os.close(lock)


def _application(headless: bool):
    if headless:
        from PySide6.QtCore import QCoreApplication

        return QCoreApplication.instance() or QCoreApplication(["rootguard-tray"])
    from PySide6.QtWidgets import QApplication

    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(["rootguard-tray"])
    app.setApplicationName("Root Guard")
    app.setDesktopFileName("rootguard-tray")
    app.setQuitOnLastWindowClosed(False)
    return app


def _broker(args, path: str):
    from tray.broker import Broker
    from tray.history import History
    from tray.queue import ApprovalQueue

    timeout = args.timeout if args.timeout is not None else user_timeout()
    return Broker(path, queue=ApprovalQueue(timeout), auto_answer=args.auto_answer, history=History())


def _ui(args, broker):
    from lsp_bridge.core.config import user_config_path
    from tray.app import TrayApp
    from tray.prompt import DEFAULT_KEY_GUARD_MS

    guard = args.key_guard_ms if args.key_guard_ms is not None else DEFAULT_KEY_GUARD_MS
    ui = TrayApp(broker, user_config=user_config_path(), key_guard_ms=guard,
                 tray_available=False if args.no_tray else None)
    if args.show_window:
        ui.window.present()
    return ui


def user_timeout() -> float:
    """``[approvals] timeout_seconds`` from the user configuration, else the built-in default."""
    from lsp_bridge.core.config import load_config

    try:
        result = load_config(None)
    except (OSError, ValueError) as exc:
        print(f"rootguard tray: user configuration unreadable ({type(exc).__name__}); countdown {DEFAULT_TIMEOUT:g} s",
              file=sys.stderr)
        return DEFAULT_TIMEOUT
    if result.config is None:
        errors = sum(1 for d in result.diagnostics if d.severity == "error")
        print(f"rootguard tray: user configuration has {errors} error(s); countdown {DEFAULT_TIMEOUT:g} s", file=sys.stderr)
        return DEFAULT_TIMEOUT
    return float(result.config.approval_timeout)


def _quit_on_signals(app, quit_) -> None:
    from PySide6.QtCore import QTimer

    for sig in (signal.SIGINT, signal.SIGTERM):  # quit from the event loop, not from inside a handler
        signal.signal(sig, lambda *_: QTimer.singleShot(0, quit_))
    timer = QTimer(app)  # lets the Python interpreter run its signal handlers
    timer.start(250)
    timer.timeout.connect(lambda: None)


# ---------------------------------------------------------------------------
# Autostart


def autostart_path(env=os.environ) -> str:
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "autostart", AUTOSTART_NAME)


def desktop_entry() -> str:
    from tray.icons import icons_dir  # the checkout's icons/, or a wheel's share/rootguard/icons

    beside = os.path.join(os.path.dirname(sys.executable), "rootguard")  # a venv's own script (Install Tray)
    command = beside if os.access(beside, os.X_OK) else shutil.which("rootguard")
    argv = [command, "tray"] if command else [sys.executable, "-m", "tray"]
    icon = str(icons_dir() / "tray-clear.svg")
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Name=Root Guard tray",
        "Comment=Shows what each editor window exposes to AI agents and asks before they go further",
        "Exec=" + " ".join(_exec_quote(a) for a in argv),
        "Terminal=false",
        "Categories=Utility;Security;",
        "X-GNOME-Autostart-enabled=true",
    ]
    if os.path.isfile(icon):
        lines.insert(4, f"Icon={icon}")
    return "\n".join(lines) + "\n"


def install_autostart() -> int:
    """Write the autostart entry, once the tray can start at all (PySide6 importable), else exit 2."""
    import importlib.util

    from lsp_bridge.core.atomic import atomic_write

    if importlib.util.find_spec("PySide6") is None:
        from lsp_bridge.cli.install_hint import missing_extra

        print(f"rootguard tray: nothing written: {missing_extra('tray --install-autostart', 'tray', 'PySide6')}",
              file=sys.stderr)
        return 2
    path = autostart_path()
    atomic_write(path, desktop_entry(), mode=0o644, dir_mode=0o755)
    print(f"wrote {path}")
    return 0


def _exec_quote(arg: str) -> str:
    """Quote one argument for a desktop entry's Exec key."""
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


if __name__ == "__main__":
    sys.exit(main())
