"""The tray protocol over a real socket, against real tray processes."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from lsp_bridge.approvals import protocol
from lsp_bridge.approvals.client import Target, TrayClient
from lsp_bridge.approvals.runtime import RuntimeDirError, ensure_private_dir, socket_path
from tests.trayproc import REPO, STARTUP_LIMIT, start_tray, stop, tray_env

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")



@pytest.fixture
def sock_dir():
    """A short directory for sockets (a unix socket path must stay under ~100 bytes)."""
    path = tempfile.mkdtemp(prefix="rg-")
    os.chmod(path, 0o700)
    yield Path(path)
    subprocess.run(["rm", "-rf", path], check=False, timeout=120)


class Raw:
    """A bare client: bytes in, JSON frames out."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        self.buffer = b""

    def send(self, data) -> None:
        self.sock.sendall(data if isinstance(data, bytes) else protocol.encode(data))

    def recv(self) -> dict:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the tray closed the connection")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def hello(self, session: str = "s1") -> dict:
        self.send(protocol.hello(session, "raw-test", ["/repo"]))
        return self.recv()

    def close(self) -> None:
        self.sock.close()


def a_request(rid: str = "r1", path: str = "/repo/.env", wait: float = 60) -> dict:
    return protocol.request(protocol.AccessRequest(
        id=rid, tool="write_file", operation="write", targets=(Target(path, ".env", "/repo"),),
        rule="protect-env", reason="exclude .env*", deadline=time.time() + wait,
    ))


@pytest.fixture
def auto_tray(sock_dir):
    """A headless tray that answers every request with allow_once."""
    sock = sock_dir / "t.sock"
    proc = start_tray(sock, "--headless", "--auto-answer", "allow_once")
    yield sock
    stop(proc)


# ---------------------------------------------------------------------------


def test_hello_gets_a_versioned_welcome_and_requests_get_decisions(auto_tray):
    raw = Raw(auto_tray)
    welcome = raw.hello()
    assert welcome["type"] == "welcome" and welcome["protocol"] == protocol.PROTOCOL_VERSION
    raw.send(protocol.status({"roots": ["/repo"], "union": ["/repo"], "widened": False}))
    raw.send(a_request("r1"))
    assert raw.recv() == {"type": "decision", "id": "r1", "answer": "allow_once", "rules": [],
                          "reason": "answered automatically (test mode)"}
    raw.close()


def test_bad_frames_get_error_replies_and_the_connection_goes_on(auto_tray):
    raw = Raw(auto_tray)
    raw.send(a_request("early"))
    assert raw.recv()["code"] == protocol.HELLO_FIRST
    raw.hello()
    raw.send(b"{this is not json}\n")
    assert raw.recv()["code"] == protocol.MALFORMED
    raw.send(b"\xff\xfe\xfd\n")
    assert raw.recv()["code"] == protocol.MALFORMED
    raw.send(b'["a", "list"]\n')
    assert raw.recv()["code"] == protocol.MALFORMED
    raw.send(b'{"type":"status","status":' + b"[" * 100_000 + b"\n")  # nested past the parser's depth
    assert raw.recv()["code"] == protocol.MALFORMED
    raw.send({"type": "launch_missiles", "id": "m1"})
    assert raw.recv() == {"type": "error", "code": protocol.UNKNOWN_TYPE,
                          "message": "unknown frame type 'launch_missiles'", "ref": "m1"}
    bad = a_request("r2")
    bad["targets"] = [{"path": "not/absolute"}]
    raw.send(bad)
    reply = raw.recv()
    assert reply["code"] == protocol.INVALID and reply["ref"] == "r2" and "targets[0].path" in reply["message"]
    raw.send(a_request("r3"))
    assert raw.recv()["answer"] == "allow_once"  # still served
    raw.close()


def test_an_oversized_frame_is_refused_and_the_next_frame_is_served(auto_tray):
    raw = Raw(auto_tray)
    raw.hello()
    raw.send(b'{"type":"status","status":{"pad":"' + b"x" * (protocol.MAX_FRAME + 10) + b'"}}\n')
    assert raw.recv()["code"] == protocol.TOO_LARGE
    raw.send(a_request("after"))
    reply = raw.recv()
    assert reply["type"] == "decision" and reply["id"] == "after"
    raw.close()


def test_a_stalled_or_flooding_client_does_not_stall_the_others(auto_tray):
    stalled = Raw(auto_tray)
    stalled.send(b'{"type":"hello","protocol":1,"session":"half')  # never finished
    flood = Raw(auto_tray)
    flood.hello("flood")
    flood.send(b"".join(protocol.encode(a_request(f"f{i}")) for i in range(300)))  # never read
    other = Raw(auto_tray)
    assert other.hello("other")["type"] == "welcome"
    for i in range(20):
        other.send(a_request(f"o{i}"))
    assert [other.recv()["id"] for _ in range(20)] == [f"o{i}" for i in range(20)]
    for raw in (stalled, flood, other):
        raw.close()


def test_the_default_socket_is_private(tmp_path):
    path = Path(socket_path())
    assert str(path).startswith(os.environ["XDG_RUNTIME_DIR"])
    proc = subprocess.Popen([sys.executable, "-m", "tray", "--headless"], cwd=REPO, env=tray_env(),
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        while not path.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        stop(proc)
    assert not path.exists()  # removed on a clean exit


def test_a_second_tray_says_so_and_exits_0(auto_tray):
    second = subprocess.run([sys.executable, "-m", "tray", "--headless", "--socket", str(auto_tray)],
                            cwd=REPO, env=tray_env(), capture_output=True, text=True, timeout=STARTUP_LIMIT)
    assert second.returncode == 0
    assert "already running" in second.stdout
    assert Raw(auto_tray).hello()["type"] == "welcome"  # the first one still serves


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user (setuid to nobody)")
def test_another_user_is_refused(auto_tray):
    nobody = pwd.getpwnam("nobody")
    # With the real permissions (0700 directory, 0600 socket) nobody cannot even connect.
    assert as_user(nobody, auto_tray) == {"error": "PermissionError"}
    # Loosen them, as a careless setup might: the uid check (SO_PEERCRED) still refuses.
    os.chmod(auto_tray.parent, 0o711)
    os.chmod(auto_tray, 0o666)
    got = as_user(nobody, auto_tray)
    assert got["reply"]["type"] == "error" and got["reply"]["code"] == protocol.REFUSED
    assert got["then"] == "closed"
    assert Raw(auto_tray).hello()["type"] == "welcome"  # our own user is still served


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a fake tray as another user (setuid to nobody)")
def test_a_tray_run_by_another_user_is_not_trusted(sock_dir):
    """A planted socket answering 'allow' must get no requests: the client checks the tray's uid."""
    nobody = pwd.getpwnam("nobody")
    os.chmod(sock_dir, 0o777)
    fake = sock_dir / "fake.sock"
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: a fake tray that welcomes everyone and allows everything
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(fake))
            os.chmod(fake, 0o666)
            server.listen(4)
            os.write(ready_w, b"1")
            while True:
                conn, _ = server.accept()
                conn.sendall(protocol.encode(protocol.welcome(os.getpid(), 30)))
        finally:
            os._exit(0)
    try:
        assert os.read(ready_r, 1) == b"1"

        async def scenario():
            client = TrayClient("s1", "test", ["/repo"], socket=str(fake), reconnect=False)
            connected = await client.start()
            decision = await client.request_access("write_file", "write", ["/repo/.env"], timeout=5)
            await client.close()
            return connected, decision

        connected, decision = asyncio.run(asyncio.wait_for(scenario(), 20))
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert connected is False and decision.answer == "no_approver"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_the_socket_directory_refuses_a_parent_owned_by_someone_else(sock_dir):
    nobody = pwd.getpwnam("nobody")
    planted = sock_dir / "runtime-0"
    planted.mkdir()
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(RuntimeDirError, match="owned by uid"):
        ensure_private_dir(str(planted / "rootguard"))
    theirs = sock_dir / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(RuntimeDirError, match="not by this user"):
        ensure_private_dir(str(theirs))


def as_user(user, sock: Path) -> dict:
    """Connect as ``user`` from a forked child; what it saw, as a dict."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        result: dict = {}
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            raw = Raw(sock)
            try:
                raw.send(protocol.hello("intruder", "evil", ["/"]))
            except BrokenPipeError:
                pass  # the tray may have hung up already: its refusal is still there to read
            result["reply"] = raw.recv()
            try:
                raw.recv()
                result["then"] = "open"
            except (EOFError, ConnectionError):
                result["then"] = "closed"
        except Exception as exc:  # noqa: BLE001
            result = {"error": type(exc).__name__}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    return json.loads(data)


# ---------------------------------------------------------------------------
# Fail closed with the client library


async def wait_until(predicate, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def test_without_a_tray_the_answer_is_no_approver_at_once(sock_dir):
    async def scenario():
        client = TrayClient("s1", "test", ["/repo"], socket=str(sock_dir / "none.sock"))
        assert await client.start() is False
        decision = await client.request_access("write_file", "write", ["/repo/.env"], timeout=60)
        await client.close()
        return decision

    decision = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert decision.answer == "no_approver" and not decision.allowed


@pytest.mark.parametrize("how", ["killed", "quit"])
def test_tray_death_mid_prompt_denies_at_once(sock_dir, how):
    sock = sock_dir / "t.sock"
    proc = start_tray(sock, "--no-tray", "--key-guard-ms", "0")
    try:
        async def scenario():
            client = TrayClient("s1", "test", ["/repo"], socket=str(sock), reconnect=False)
            assert await client.start()
            asked = asyncio.create_task(
                client.request_access("write_file", "write", [Target("/repo/.env", ".env", "/repo")], timeout=600)
            )
            await wait_until(lambda: client.queued)  # the prompt is up in the tray
            proc.send_signal(signal.SIGKILL if how == "killed" else signal.SIGTERM)
            decision = await asyncio.wait_for(asked, 20)  # far before the 600 s deadline
            await client.close()
            return decision

        decision = asyncio.run(scenario())
        if how == "quit":
            assert proc.wait(20) == 0  # an open prompt must not hold the quit back
    finally:
        stop(proc)
    assert decision.answer == "deny"
    if how == "quit":
        assert decision.reason == "the tray quit"
    else:
        assert "went away" in decision.reason


def test_after_a_tray_restart_clients_reconnect_and_are_served(sock_dir):
    sock = sock_dir / "t.sock"
    first = start_tray(sock, "--headless", "--auto-answer", "allow_once")

    async def scenario():
        client = TrayClient("s1", "test", ["/repo"], socket=str(sock), backoff=(0.05, 0.2))
        assert await client.start()
        await client.publish_status({"roots": ["/repo"], "union": ["/repo"], "widened": False})
        first.kill()
        first.wait(10)
        await wait_until(lambda: not client.connected)
        assert (await client.request_access("read_file", "read", ["/repo/a"])).answer == "no_approver"
        second = start_tray(sock, "--headless", "--auto-answer", "allow_once")
        try:
            await wait_until(lambda: client.connected)
            decision = await client.request_access("read_file", "read", ["/repo/a"], timeout=30)
        finally:
            stop(second)
        await client.close()
        return decision

    assert asyncio.run(scenario()).answer == "allow_once"


@pytest.mark.parametrize("mode, per_client", [("--headless", 300), ("--no-tray", 60)])
def test_thousands_of_requests_leave_the_tray_alive(sock_dir, mode, per_client):
    """PySide6 6.12 on Python 3.11 loses a reference per Qt call (the tray extra's pin excludes it):
    with such a build the tray aborts ("Fatal Python error") within a few thousand."""
    sock = sock_dir / "t.sock"
    proc = start_tray(sock, mode, "--auto-answer", "allow_once")

    async def one(n: int) -> list[str]:
        client = TrayClient(f"s{n}", "load", [f"/repo/{n}"], socket=str(sock), reconnect=False)
        assert await client.start()
        answers = []
        for i in range(per_client):
            decision = await client.request_access("read_file", "read", [f"/repo/{n}/f{i}"], timeout=30)
            answers.append(decision.answer)
        await client.close()
        return answers

    async def scenario():
        return [a for answers in await asyncio.gather(*(one(n) for n in range(10))) for a in answers]

    try:
        answers = asyncio.run(scenario())
        assert proc.poll() is None, "the tray died"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert answers == ["allow_once"] * 10 * per_client
    assert proc.returncode == 0 and b"Fatal Python error" not in err


def test_install_autostart_writes_an_xdg_entry(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tray", "--install-autostart"], cwd=REPO, env=tray_env(),
                          capture_output=True, text=True, timeout=STARTUP_LIMIT)
    assert done.returncode == 0
    entry = Path(os.environ["XDG_CONFIG_HOME"]) / "autostart" / "rootguard-tray.desktop"
    text = entry.read_text()
    assert text.startswith("[Desktop Entry]\n") and "Type=Application\n" in text
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    assert exec_line.endswith(" tray") or exec_line.endswith(" -m tray")
