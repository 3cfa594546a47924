"""The one-pass ``rootguard trace`` run is a sandbox whoever starts it (issue 30 class 5).

Own PID namespace and ``/proc``, no controlling terminal, every process killed at the end
(a daemonised child neither hangs the trace nor outlives it), a time limit, the temporary
folder removed. Each attack is also run under the bubblewrap line trace used before
(``--ro-bind / / --proc /proc``, no PID namespace, no new session), where it succeeds.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli.main"]
NEEDS = pytest.mark.skipif(not (shutil.which("strace") and shutil.which("bwrap")),
                           reason="strace and bubblewrap are needed (scripts/bootstrap.sh --test installs them)")
pytestmark = [NEEDS, pytest.mark.timeout(300)]


def bare(*argv: str) -> list[str]:
    """The one-pass line before this change: the host's PID namespace, its /proc, the caller's session."""
    return ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent", "--", *argv]


def trace(root: Path, *command: str, extra: tuple[str, ...] = (), timeout: float = 120,
          env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*ROOTGUARD, "trace", "--json", "--root", str(root), *extra, "--", *command],
                          capture_output=True, text=True, timeout=timeout, cwd=str(root),
                          env=env or dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture
def root(tmp_path, isolated_user):
    folder = tmp_path / "app"
    folder.mkdir()
    return folder


def _alive(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(pid))
    return found


def test_own_pid_namespace_and_proc(root):
    host = len([p for p in os.listdir("/proc") if p.isdigit()])
    done = trace(root, "sh", "-c", "ls /proc | grep -c '^[0-9]' >&2; cat /proc/1/cmdline >&2; echo >&2")
    assert done.returncode == 0, done.stderr
    count = int(done.stderr.strip().splitlines()[0])
    assert count < 10 < host  # only the sandbox's own processes
    # Unprotected: the host's /proc, every process of the machine (and /proc/<pid>/root of each).
    seen = subprocess.run(bare("sh", "-c", "ls /proc | grep -c '^[0-9]'"), capture_output=True, text=True,
                          timeout=60)
    assert int(seen.stdout) >= host - 20 > 10


def test_no_controlling_terminal(root):
    """TIOCSTI needs the caller's terminal; inside the trace there is none to open."""
    probe = "if exec 3</dev/tty; then echo TTY-OPEN; else echo NO-TTY; fi"

    def under_pty(argv: list[str]) -> str:
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal
            os.chdir(root)
            os.environ["PYTHONPATH"] = str(REPO)
            os.execvp(argv[0], argv)
        out = b""
        deadline = time.time() + 120
        while time.time() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        os.waitpid(pid, 0)
        os.close(fd)
        return out.decode(errors="replace")

    assert "NO-TTY" in under_pty([*ROOTGUARD, "trace", "--root", str(root), "--", "sh", "-c", probe])
    assert "TTY-OPEN" in under_pty(bare("sh", "-c", probe))  # unprotected: the caller's terminal is there


def test_a_daemonised_child_neither_hangs_the_trace_nor_outlives_it(root):
    marker = f"31{uuid.uuid4().int % 10_000_000}"
    start = time.monotonic()
    done = trace(root, "sh", "-c", f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & echo started >&2",
                 timeout=120)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60
    time.sleep(0.5)
    assert _alive(f"sleep\x00{marker}") == []
    # Unprotected: strace waits for the daemon, and the daemon outlives everything.
    other = f"32{uuid.uuid4().int % 10_000_000}"
    proc = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null", *bare(
        "sh", "-c", f"setsid sleep {other} </dev/null >/dev/null 2>&1 & echo started")],
        stdout=subprocess.PIPE, start_new_session=True)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    try:
        assert _alive(f"sleep\x00{other}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in _alive(f"sleep\x00{other}"):
            os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_time_limit_kills_everything_and_the_temp_folder_is_removed(root, tmp_path):
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(temp))
    marker = f"33{uuid.uuid4().int % 10_000_000}"
    start = time.monotonic()
    done = trace(root, "sh", "-c", f"mkdir -p $TMPDIR/locked/in && chmod 000 $TMPDIR/locked; sleep {marker}",
                 extra=("--timeout", "3"), env=env)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60
    assert json.loads(done.stdout)["timed_out"] is True
    assert _alive(f"sleep\x00{marker}") == []
    assert list(temp.iterdir()) == []  # the work folder (strace log, private TMPDIR) is gone


def test_no_write_outside_the_union_through_proc_pid_root(root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    script = f"for p in /proc/[0-9]*; do echo pwned > $p/root{outside}/escaped 2>/dev/null; done; true"
    done = trace(root, "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert not (outside / "escaped").exists()  # every /proc/<pid>/root is the sandbox's own read-only view
    if os.geteuid() != 0:
        return  # unprivileged, bubblewrap's user namespace already keeps the host's processes out of reach
    # Unprotected, as root: the host's /proc hands over every process's root, writable.
    subprocess.run(bare("sh", "-c", script), capture_output=True, timeout=60)
    assert (outside / "escaped").read_text() == "pwned\n"


def _as_nobody() -> list[str]:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root to switch to nobody with setpriv")
    system = "/usr/bin/python3"
    version = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=30)
    if version.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip("no system Python of the test's version to run rootguard as nobody")
    import site

    uid = int(subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True, check=True, timeout=30).stdout)
    path = os.pathsep.join([str(REPO), *site.getsitepackages()])
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "env", f"PYTHONPATH={path}",
            f"PATH={os.environ.get('PATH', os.defpath)}", "HOME=/nonexistent", system]


def test_as_an_unprivileged_user_the_same_sandbox():
    prefix = _as_nobody()
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="rg-trace-nobody-", dir="/tmp"))
    try:
        os.chmod(base, 0o777)
        root, outside = base / "app", base / "outside"
        root.mkdir(mode=0o777)
        outside.mkdir(mode=0o777)
        os.chmod(root, 0o777)
        os.chmod(outside, 0o777)
        user = base / "user.toml"
        user.write_text("version = 2\n")
        os.chmod(user, 0o644)
        script = (f"ls /proc | grep -c '^[0-9]'; for p in /proc/[0-9]*; do echo pwned > $p/root{outside}/escaped "
                  "2>/dev/null; done; true")
        done = subprocess.run([*prefix[:-1], f"ROOTGUARD_CONFIG={user}", prefix[-1], "-m", "lsp_bridge.cli.main",
                               "trace", "--json", "--root", str(root), "--", "sh", "-c", script],
                              capture_output=True, text=True, timeout=120, cwd=str(base))
        if done.returncode == 125:
            pytest.skip(f"tracing is not possible as nobody here: {done.stderr.strip()}")
        assert done.returncode == 0, done.stderr
        assert int(done.stderr.strip().splitlines()[0]) < 10  # its own PID namespace, as nobody too
        assert not (outside / "escaped").exists()
        host = subprocess.run([*prefix[:-1], *bare("sh", "-c", "ls /proc | grep -c '^[0-9]'")], capture_output=True,
                              text=True, timeout=60)
        assert int(host.stdout) > 10  # unprotected: every process of the machine
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_traced_command_cannot_plant_git_hooks_for_the_persons_next_git_command(tmp_path, isolated_user):
    """A root that is a repository: its files are writable in the one pass, its ``.git`` is not (a hook or
    ``core.fsmonitor`` would run at the person's next ``git``); neither is a git directory that
    ``[workspace] git = "read"`` brings into the union."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    plant = "echo pwned > .git/hooks/post-checkout; echo made > new.txt; true"
    done = trace(repo, "sh", "-c", plant)
    assert done.returncode == 0, done.stderr
    assert (repo / "new.txt").exists() and not (repo / ".git/hooks/post-checkout").exists()
    # The union entry a git rule adds, from a narrow root:
    user = isolated_user / ".config" / "rootguard" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('version = 2\n[workspace]\ngit = "read"\n')
    done = trace(repo / "pkg", "sh", "-c", f"echo pwned > {repo}/.git/hooks/post-merge; true")
    assert done.returncode == 0, done.stderr
    assert not (repo / ".git/hooks/post-merge").exists()
    # Unprotected (the whole entry bound writable, as the one pass did before), the hook is planted:
    subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", str(repo), str(repo),
                    "--chdir", str(repo), "--", "sh", "-c", plant], capture_output=True, timeout=60)
    assert (repo / ".git/hooks/post-checkout").read_text() == "pwned\n"


KEYRING_AND_ENV = ("import ctypes, os, platform\n"
                   "libc = ctypes.CDLL(None, use_errno=True)\n"
                   "number = {'x86_64': 250, 'aarch64': 219}[platform.machine()]  # keyctl\n"
                   "got = libc.syscall(number, 0, -3, 1)  # KEYCTL_GET_KEYRING_ID, the session keyring\n"
                   "keyring = f'refused {ctypes.get_errno()}' if got < 0 else 'open'\n"
                   "open('seen.txt', 'w').write(f\"{keyring} token={os.environ.get('GITHUB_TOKEN')}\")\n")


def test_enforced_rounds_have_run_s_seccomp_filter_and_environment_allow_list(root):
    """``--enforced`` rounds are ``rootguard run``'s sandbox: its seccomp filter (no packet socket) and its
    environment allow-list (a token stays out); unprotected, the same line without them lets both through
    (in a user namespace only the filter keeps the keyrings out: a packet socket is refused anyway)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), GITHUB_TOKEN="ghp_secret_token_value")
    python = "/usr/bin/python3"  # the system's: a virtualenv under the home is not inside the sandbox
    if not os.path.exists(python):
        pytest.skip("no /usr/bin/python3")
    done = trace(root, python, "-c", KEYRING_AND_ENV, extra=("--enforced",), env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["exit_code"] == 0, done.stderr
    seen = (root / "seen.txt").read_text()
    assert seen.startswith("refused ") and "token=None" in seen, seen  # the filter's error
    # The same profile's line (what --enforced ran before) without the filter, with the caller's environment:
    from lsp_bridge.core.session import open_session
    from lsp_bridge.sandbox.profile import build_profile

    line = build_profile(open_session([str(root)], env), cwd=str(root)).command_line([python, "-c", KEYRING_AND_ENV])
    subprocess.run(line, capture_output=True, timeout=60, cwd=str(root), env=env)
    assert (root / "seen.txt").read_text() == "open token=ghp_secret_token_value"
