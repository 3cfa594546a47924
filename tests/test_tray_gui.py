"""The tray's widgets (pytest-qt, offscreen): prompt, session list, icon states.

Clients are real: QLocalSocket connections to a real broker on a real socket.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtNetwork import QLocalSocket  # noqa: E402
from PySide6.QtWidgets import QSystemTrayIcon  # noqa: E402

from lsp_bridge.approvals import protocol  # noqa: E402
from lsp_bridge.approvals.client import TrayClient  # noqa: E402
from lsp_bridge.approvals.protocol import AccessRequest, Target  # noqa: E402
from lsp_bridge.core.config import parse_file  # noqa: E402
from tray.app import TrayApp  # noqa: E402
from tray.broker import Broker  # noqa: E402
from tray.prompt import ApprovalPrompt  # noqa: E402
from tray.queue import ApprovalQueue, Requester  # noqa: E402

USER_TEXT = "# my settings — keep me\nversion = 2\n\n[approvals]\ntimeout_seconds = 30  # default\n"


class QtClient:
    """A real socket client living in the Qt event loop."""

    def __init__(self, path: str):
        self.socket = QLocalSocket()
        self.frames: list[dict] = []
        self.reader = protocol.FrameReader()
        self.socket.readyRead.connect(self._read)
        self.socket.connectToServer(path)
        assert self.socket.waitForConnected(5000)

    def _read(self) -> None:
        self.frames += [f for f in self.reader.feed(bytes(self.socket.readAll())) if isinstance(f, dict)]

    def send(self, frame: dict) -> None:
        self.socket.write(protocol.encode(frame))
        self.socket.flush()

    def hello(self, session="s1", client="rootguard-lsp", folders=("/shop/packages/checkout",)) -> None:
        self.send(protocol.hello(session, client, list(folders), pid=4242))

    def ask(self, rid, paths=("/shop/.env",), op="write", tool="write_file", need="write", relative=True) -> None:
        targets = tuple(
            Target(p, os.path.relpath(p, "/shop") if relative and p.startswith("/shop/") else None,
                   "/shop" if p.startswith("/shop/") else None, need)
            for p in paths
        )
        self.send(protocol.request(AccessRequest(
            id=rid, tool=tool, operation=op, targets=targets, rule="protect-env",
            reason="matches exclude .env* of rule protect-env", deadline=time.time() + 600,
        )))

    def decisions(self, rid: str) -> list[dict]:
        return [f for f in self.frames if f.get("type") == "decision" and f.get("id") == rid]

    def answer(self, rid: str) -> str | None:
        got = self.decisions(rid)
        return got[0]["answer"] if got else None


class HandClock:
    def __init__(self):
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def user_config(tmp_path, monkeypatch):
    path = tmp_path / "rootguard" / "config.toml"
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(path))
    return path


@pytest.fixture
def make_tray(qtbot, user_config):
    made = []
    sock_dir = tempfile.mkdtemp(prefix="rg-")

    def make(timeout=30.0, key_guard_ms=0, tray_available=False, clock=None, history=None):
        queue = ApprovalQueue(timeout, clock=clock) if clock else ApprovalQueue(timeout)
        broker = Broker(os.path.join(sock_dir, f"t{len(made)}.sock"), queue=queue, history=history)
        broker.start()
        app = TrayApp(broker, user_config=str(user_config), key_guard_ms=key_guard_ms, tray_available=tray_available)
        app.window.quit_on_close = None  # closing test windows must not quit the test run
        made.append(app)
        return app

    yield make
    for app in made:
        app.broker.stop()
        app.prompt.pending = None
        app.prompt.hide()
        app.window.hide()
        if app.tray is not None:
            app.tray.hide()
    shutil.rmtree(sock_dir, ignore_errors=True)


def connect(qtbot, app, **hello) -> QtClient:
    client = QtClient(app.broker.path)
    client.hello(**hello)
    qtbot.waitUntil(lambda: any(f["type"] == "welcome" for f in client.frames))
    return client


def prompt_ready(qtbot, app) -> None:
    qtbot.waitUntil(lambda: app.prompt.isVisible() and not app.prompt.guarded)


# ---------------------------------------------------------------------------
# The prompt


def test_the_prompt_shows_who_asks_and_every_target_of_a_batch(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1", paths=("/shop/.env", "/shop/packages/checkout/src/pay.ts", "/etc/hosts"))
    prompt_ready(qtbot, app)
    prompt = app.prompt
    assert prompt.heading.text() == "rootguard-lsp wants to write 3 files"
    assert "rootguard-lsp — checkout" in prompt.who.text() and "session s1" in prompt.who.text()
    assert prompt.tool.text() == "write_file" and prompt.operation.text() == "write"
    rows = [[prompt.targets.topLevelItem(i).text(c) for c in range(4)] for i in range(prompt.targets.topLevelItemCount())]
    assert rows == [
        ["/shop/.env", ".env", "/shop", "write"],
        ["/shop/packages/checkout/src/pay.ts", "packages/checkout/src/pay.ts", "/shop", "write"],
        ["/etc/hosts", "(outside every root)", "", "write"],
    ]
    assert prompt.rule.text() == "protect-env"
    assert prompt.reason.text() == "matches exclude .env* of rule protect-env"
    assert prompt.countdown.text().startswith("Denies in ")


def test_deny_is_the_default_button_and_esc_denies(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1")
    prompt_ready(qtbot, app)
    assert app.prompt.deny_button.isDefault()
    assert not any(b.isDefault() for a, b in app.prompt.buttons.items() if a != "deny")
    qtbot.keyClick(app.prompt, Qt.Key_Escape)
    qtbot.waitUntil(lambda: client.answer("r1") == "deny")
    assert not app.prompt.isVisible()
    client.ask("r2", paths=("/shop/other",))
    prompt_ready(qtbot, app)
    qtbot.keyClick(app.prompt, Qt.Key_Return)  # Enter presses the default button: Deny
    qtbot.waitUntil(lambda: client.answer("r2") == "deny")


def test_closing_the_prompt_denies_and_the_next_request_comes_up(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1", paths=("/shop/a",))
    client.ask("r2", paths=("/shop/b",))
    prompt_ready(qtbot, app)
    assert app.prompt.queue_label.text() == "1 of 2 waiting"
    app.prompt.close()
    qtbot.waitUntil(lambda: client.answer("r1") == "deny")
    qtbot.waitUntil(lambda: app.prompt.isVisible() and app.prompt.pending.request.id == "r2")
    assert client.answer("r2") is None


def test_keystrokes_are_ignored_for_a_moment_after_a_prompt_appears(qtbot):
    queue = ApprovalQueue(30)
    pending = queue.submit(
        Requester(1, "s1", "rootguard-lsp"),
        AccessRequest("r1", "write_file", "write", (Target("/shop/.env", need="write"),), None, "", time.time() + 60),
    ).pending
    prompt = ApprovalPrompt(key_guard_ms=400)
    qtbot.addWidget(prompt)
    answers = []
    prompt.answered.connect(lambda p, a: answers.append(a))
    prompt.show_pending(pending)
    assert prompt.guarded and not any(b.isEnabled() for b in prompt.buttons.values())
    for key in (Qt.Key_Escape, Qt.Key_Return, Qt.Key_Space, Qt.Key_O, Qt.Key_A):
        qtbot.keyClick(prompt, key)
        qtbot.keyClick(prompt.deny_button, key)
    assert answers == []
    qtbot.waitUntil(lambda: not prompt.guarded)
    assert prompt.deny_button.isEnabled()
    qtbot.keyClick(prompt, Qt.Key_Escape)
    assert answers == ["deny"]


def test_countdown_expiry_denies_once_stores_nothing_and_leaves_a_missed_request(qtbot, make_tray, user_config):
    app = make_tray(timeout=0.3)
    client = connect(qtbot, app)
    client.ask("r1")
    qtbot.waitUntil(lambda: client.answer("r1") is not None, timeout=5000)
    assert [d["answer"] for d in client.decisions("r1")] == ["timeout"]
    assert not app.prompt.isVisible()
    assert not user_config.exists()  # nothing stored
    (missed,) = app.broker.queue.missed
    assert missed.paths == ("/shop/.env",) and missed.why == "no answer within 0.3 s"
    assert app.window.missed.topLevelItemCount() == 1
    assert app.window.tabs.tabText(3) == "Missed requests (1)"


def test_interaction_pauses_the_countdown(qtbot, make_tray):
    clock = HandClock()
    app = make_tray(timeout=30, clock=clock)
    client = connect(qtbot, app)
    client.ask("r1", paths=("/shop/a",))
    client.ask("r2", paths=("/shop/b",))
    prompt_ready(qtbot, app)
    head = app.prompt.pending
    assert head.request.id == "r1"
    qtbot.mouseClick(app.prompt.targets.viewport(), Qt.LeftButton)
    assert head.countdown.paused
    assert app.prompt.countdown.text() == "Countdown paused (30 s left)"
    clock.now += 100
    app.broker.check_expiry()
    assert client.answer("r1") is None and app.prompt.pending is head  # paused: still asking
    qtbot.waitUntil(lambda: client.answer("r2") == "timeout")  # the untouched one expired


def test_identical_requests_merge_into_one_prompt_with_a_counter(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1")
    client.ask("r2")
    qtbot.waitUntil(lambda: app.prompt.counter.text() == "×2 identical requests")
    assert len(app.broker.queue.pending) == 1
    prompt_ready(qtbot, app)
    qtbot.mouseClick(app.prompt.buttons["allow_once"], Qt.LeftButton)
    qtbot.waitUntil(lambda: client.answer("r1") == "allow_once" and client.answer("r2") == "allow_once")
    assert app.broker.queue.recent[0].count == 2


def test_allow_for_this_session_lasts_until_the_folders_change(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1")
    prompt_ready(qtbot, app)
    qtbot.mouseClick(app.prompt.buttons["allow_session"], Qt.LeftButton)
    qtbot.waitUntil(lambda: client.answer("r1") == "allow_session")
    client.ask("r2")
    qtbot.waitUntil(lambda: client.answer("r2") == "allow_session")  # no prompt this time
    assert not any(f["type"] == "queued" and f["id"] == "r2" for f in client.frames)
    client.send(protocol.status({"roots": ["/shop/packages/checkout", "/shop"], "union": ["/shop"], "widened": True}))
    client.ask("r3")
    qtbot.waitUntil(lambda: any(f["type"] == "queued" and f["id"] == "r3" for f in client.frames))
    assert app.prompt.isVisible()


def test_always_writes_a_user_rule_keeping_the_users_comments(qtbot, make_tray, user_config):
    user_config.parent.mkdir(parents=True)
    user_config.write_text(USER_TEXT)
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1")
    prompt_ready(qtbot, app)
    qtbot.mouseClick(app.prompt.buttons["always"], Qt.LeftButton)
    qtbot.waitUntil(lambda: client.answer("r1") == "always")
    (decision,) = client.decisions("r1")
    text = user_config.read_text()
    assert text.startswith(USER_TEXT)
    assert stat.S_IMODE(user_config.stat().st_mode) == 0o600
    parsed = parse_file(str(user_config), source="user", base_dir=None)
    (rule,) = parsed.layer.paths
    assert decision["rules"] == [rule.id]
    assert (rule.anchor, rule.write, rule.delete, rule.read) == ("/shop/.env", "allow", "request", None)


def test_always_is_unavailable_when_a_targets_policy_is_unknown(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.ask("r1", op="rename", need=None, paths=("/shop/a", "/shop/b"))
    prompt_ready(qtbot, app)
    assert not app.prompt.buttons["always"].isEnabled()
    assert app.prompt.buttons["allow_once"].isEnabled()


# ---------------------------------------------------------------------------
# Sessions, menu, window


WIDENED = {
    "roots": ["/shop/packages/checkout", "/shop"],
    "union": ["/shop"],
    "entries": [{"path": "/shop", "origin": "folder", "reason": "workspace folder"}],
    "shadowed": [{"path": "/shop/packages/checkout", "by": "/shop"}],
    "worktrees": [{"path": "/shop-wt/feature", "mode": "request", "repository": "/shop"}],
    "mounts": {"roots_without_mount": ["/shop"]},
    "widened": True,
    "widening": [{"folder": "/shop", "entry": "/shop/packages/checkout", "kind": "ancestor"}],
    "summary": "⚠ union ×180: +60,660 files",
    "widening_lines": ["/shop widens /shop/packages/checkout: it contains the narrow root, which no longer limits anything"],
    "warnings": [],
}


def test_the_session_list_shows_each_window_and_what_it_exposes(qtbot, make_tray):
    app = make_tray()
    lsp = connect(qtbot, app)
    mcp = connect(qtbot, app, session="m1", client="rootguard-mcp", folders=("/srv/api",))
    mcp.send(protocol.status({"roots": ["/srv/api"], "union": ["/srv/api"], "widened": False, "summary": "1 root"}))
    lsp.send(protocol.status(WIDENED))
    items = app.window.session_list
    qtbot.waitUntil(lambda: items.count() == 2 and items.item(0).data(Qt.UserRole + 1))
    assert items.item(0).text() == "rootguard-lsp — checkout, shop\n⚠ union ×180: +60,660 files"
    assert not items.item(0).icon().isNull()  # the widened mark
    assert items.item(1).text() == "rootguard-mcp — api\n1 root"
    assert items.item(1).icon().isNull()
    items.setCurrentRow(0)
    details = app.window.details.toPlainText()
    for line in ("/shop-wt/feature [request]", "/shop — folder: workspace folder",
                 "/shop/packages/checkout (inside /shop)", "not mounted: /shop", WIDENED["widening_lines"][0]):
        assert line in details
    qtbot.mouseClick(app.window.acknowledge, Qt.LeftButton)
    qtbot.waitUntil(lambda: items.item(0).icon().isNull())
    app.build_menu()
    titles = [a.text() for a in app.menu.actions()]
    assert "rootguard-lsp — checkout, shop — ⚠ union ×180: +60,660 files" in titles
    assert "rootguard-mcp — api — 1 root" in titles
    mcp.socket.disconnectFromServer()
    qtbot.waitUntil(lambda: items.count() == 1)


def test_withdraw_acknowledgement_reaches_the_session_and_the_menu_never_says_all_clear_beside_a_warning(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    acknowledged = {**WIDENED, "acknowledged": True, "withdrawable": True,
                    "summary": "⚠ checkout inside shop (acknowledged)"}
    client.send(protocol.status(acknowledged))
    qtbot.waitUntil(lambda: any(s.status for s in app.broker.registry.sessions()))
    app.refresh()
    app.build_menu()
    header = app.menu.actions()[0].text()
    assert "all clear" not in header and "1 acknowledged widening" in header, header
    session_menu = next(a.menu() for a in app.menu.actions() if a.menu() and "checkout, shop" in a.text())
    withdraw = next(a for a in session_menu.actions() if a.text() == "Withdraw acknowledgement")
    withdraw.trigger()
    qtbot.waitUntil(lambda: any(f.get("type") == "withdraw_acknowledgement" for f in client.frames))
    app.window.session_list.setCurrentRow(0)
    assert app.window.withdraw.isEnabled()
    client.send(protocol.status({**WIDENED, "widened": False, "summary": "2 roots", "warnings": []}))
    qtbot.waitUntil(lambda: all(s.status and s.status.get("widened") is False for s in app.broker.registry.sessions()))
    app.refresh()
    app.build_menu()
    assert "all clear" in app.menu.actions()[0].text()


def test_a_widening_is_announced(qtbot, make_tray):
    app = make_tray()  # no system tray offscreen: the window's status bar carries the message
    client = connect(qtbot, app)
    client.send(protocol.status(WIDENED))
    qtbot.waitUntil(lambda: "union widened" in app.window.statusBar().currentMessage())
    assert "rootguard-lsp — checkout, shop: ⚠ union ×180" in app.window.statusBar().currentMessage()


def test_without_a_system_tray_the_window_shows_and_says_why(qtbot, make_tray):
    app = make_tray(tray_available=False)
    assert app.tray is None
    assert app.window.isVisible() and app.window.banner.isVisible()
    assert "No system tray is available" in app.window.banner.text()


def test_icon_state_machine(qtbot, make_tray):
    app = make_tray(tray_available=True)
    assert isinstance(app.tray, QSystemTrayIcon)

    def shows(state):
        return app.state == state and app.tray.icon().cacheKey() == app.icons[state].cacheKey()

    assert shows("disconnected") and "no editor connected" in app.tray.toolTip()
    client = connect(qtbot, app)
    qtbot.waitUntil(lambda: shows("clear"))
    client.send(protocol.status(WIDENED))
    qtbot.waitUntil(lambda: shows("widened"))
    client.ask("r1")
    qtbot.waitUntil(lambda: shows("pending"))
    assert app.tray.toolTip() == "Root Guard — approval pending (1 window, 1 approval waiting)"
    prompt_ready(qtbot, app)
    qtbot.keyClick(app.prompt, Qt.Key_Escape)
    qtbot.waitUntil(lambda: shows("widened"))
    app._acknowledge(app.broker.registry.sessions()[0].conn)
    assert shows("clear")
    client.socket.disconnectFromServer()
    qtbot.waitUntil(lambda: shows("disconnected"))


# ---------------------------------------------------------------------------
# Issue 14: the numbers arrive, who is who, what a write changes, memory


MEASURING = dict(WIDENED, summary="⚠ union widened (1 root); measuring…", inventory=None, inventory_pending=True,
                 acknowledged=False)
MEASURED = dict(WIDENED, summary="⚠ union ×6.2: +3,509 files, 3 secrets files, .git (43 commits)",
                inventory={"files_before": 680, "files_after": 4189, "ratio": 6.2,
                           "credentials": [{"path": "/shop/.env", "count": 4}], "git": []},
                inventory_pending=False, acknowledged=False,
                widening_lines=[WIDENED["widening_lines"][0],
                                "Adding /shop widens the union: 680 → 4,189 files (×6.2)."])


def test_the_notification_and_last_widening_update_when_the_inventory_arrives(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    client.send(protocol.status(MEASURING))
    bar = app.window.statusBar()
    qtbot.waitUntil(lambda: "measuring" in bar.currentMessage())
    app.window.session_list.setCurrentRow(0)
    assert "measuring" in app.window.details.toPlainText().lower()
    client.send(protocol.status(MEASURED))
    qtbot.waitUntil(lambda: "×6.2: +3,509 files" in bar.currentMessage())
    details = app.window.details.toPlainText()
    assert "680 → 4,189 files (×6.2)" in details and "measuring" not in details.lower()


def test_each_session_names_its_editor_and_its_workspace(qtbot, make_tray):
    app = make_tray()
    vscode = connect(qtbot, app, session="a", client="Visual Studio Code", folders=("/shop/packages/checkout", "/shop"))
    nvim = connect(qtbot, app, session="b", client="Neovim", folders=("/shop/packages/checkout",))
    items = app.window.session_list
    qtbot.waitUntil(lambda: items.count() == 2)
    labels = sorted(items.item(i).text().split("\n")[0] for i in range(2))
    assert labels == ["Neovim — checkout", "Visual Studio Code — checkout, shop"]
    assert vscode.socket.state() == nvim.socket.state() == QLocalSocket.ConnectedState


def test_a_write_prompt_shows_the_change_and_a_config_change_in_words(qtbot, make_tray):
    from lsp_bridge.approvals.preview import write_preview

    app = make_tray()
    client = connect(qtbot, app)
    before = 'version = 2\n# the team\'s rules\n'
    after = before + '[[paths]]\nid = "all"\npath = "/"\npolicies = { read = "allow", write = "allow" }\n'
    preview = write_preview("/shop/.rootguard.toml", before, after, config=True)
    client.send(protocol.request(AccessRequest(
        id="w1", tool="write_file", operation="write",
        targets=(Target("/shop/.rootguard.toml", ".rootguard.toml", "/shop", "write"),), rule=None,
        reason="/shop/.rootguard.toml is an active Root Guard configuration file; changing it needs approval",
        deadline=time.time() + 600, preview=preview,
    )))
    qtbot.waitUntil(lambda: app.prompt.isVisible())
    shown = app.prompt.preview.toPlainText()
    assert 'adds rule all — path "/": read allow, write allow (the whole disk or home directory)' in shown
    assert '+path = "/"' in shown and "--- a/.rootguard.toml" in shown
    assert app.prompt.rule.text().startswith("none — protected target: /shop/.rootguard.toml is an active")
    assert app.prompt.height() <= 800


def test_decisions_missed_requests_and_acknowledgements_survive_a_restart(qtbot, make_tray, tmp_path):
    from tray.history import History

    clock = HandClock()
    store = tmp_path / "state" / "tray-history.jsonl"
    app = make_tray(clock=clock, timeout=5.0, history=History(str(store)))
    client = connect(qtbot, app)
    client.send(protocol.status(MEASURED))
    client.ask("r1")
    qtbot.waitUntil(lambda: app.prompt.pending is not None)
    app.answer(app.prompt.pending, "deny")
    client.ask("r2", paths=("/shop/.env.local",))
    qtbot.waitUntil(lambda: any(p.request.id == "r2" for p in app.broker.queue.pending))
    clock.now += 6
    app.broker.check_expiry()
    qtbot.waitUntil(lambda: client.answer("r2") == "timeout")
    app.window.session_list.setCurrentRow(0)
    app.window.acknowledge.click()
    qtbot.waitUntil(lambda: any(f["type"] == "acknowledge" for f in client.frames))
    app.broker.stop()

    again = make_tray(history=History(str(store)))
    recent = [again.window.recent.topLevelItem(i) for i in range(again.window.recent.topLevelItemCount())]
    answers = [item.text(5) for item in recent]
    assert answers == ["widening acknowledged", "timed out (denied)", "denied"]
    assert recent[0].text(1) == "rootguard-lsp — checkout, shop"
    missed = again.window.missed
    assert missed.topLevelItemCount() == 1 and missed.topLevelItem(0).text(4) == "/shop/.env.local"


def test_a_long_run_of_prompts_keeps_working(qtbot, make_tray):
    app = make_tray()
    client = connect(qtbot, app)
    for i in range(100):
        client.ask(f"r{i}", paths=(f"/shop/f{i}",))
        qtbot.waitUntil(lambda: app.prompt.pending is not None and not app.prompt.guarded)
        qtbot.keyClick(app.prompt, Qt.Key_Escape)
        qtbot.waitUntil(lambda i=i: client.answer(f"r{i}") == "deny")
    assert len(app.broker.queue.recent) == 50  # bounded history
    assert app.state == "clear"


def test_clients_reconnect_and_republish_after_a_tray_restart(qtbot):
    sock = os.path.join(tempfile.mkdtemp(prefix="rg-"), "t.sock")
    first = Broker(sock)
    first.start()
    status = {"roots": ["/repo"], "union": ["/repo"], "widened": False, "summary": "1 root"}
    stop = threading.Event()

    def run_client():
        async def main():
            client = TrayClient("s1", "rootguard-lsp", ["/repo"], socket=sock, backoff=(0.02, 0.1))
            await client.start()
            await client.publish_status(status)
            while not stop.is_set():
                await asyncio.sleep(0.02)
            await client.close()
        asyncio.run(main())

    thread = threading.Thread(target=run_client)
    thread.start()
    try:
        qtbot.waitUntil(lambda: [s.status for s in first.registry.sessions()] == [status], timeout=10000)
        first.stop()
        second = Broker(sock)
        second.start()
        qtbot.waitUntil(lambda: [s.status for s in second.registry.sessions()] == [status], timeout=10000)
        assert second.registry.sessions()[0].folders == ("/repo",)
        second.stop()
    finally:
        stop.set()
        thread.join(10)
    shutil.rmtree(os.path.dirname(sock), ignore_errors=True)
    assert not Path(sock).exists()

