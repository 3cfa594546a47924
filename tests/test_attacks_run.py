"""Attacks from inside ``rootguard run`` that are not about files (issue 30, classes 2 to 4).

The setting of the issue: ``mono/``, a git repository whose ``.rootguard.toml`` denies
``**/.env``, and the narrow root ``mono/packages/app``. Each attack runs through the real
``rootguard run`` as root (the machine runs the tests as root: dev containers do too) and as
the unprivileged user ``nobody`` (``setpriv``), and once *without* the protection (plain
``sh``/``python3``, or bare bubblewrap with the flags ``rootguard run`` used before: the
same mask, ``--new-session --die-with-parent --unshare-pid``), where it must succeed.

``ATTACKS`` names each one; every test id carries it, so held/total is the count of passing
``held`` tests over ``ATTACKS`` (times the users that apply).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import pty
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import make_repo

BWRAP = shutil.which("bwrap")
pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(BWRAP is None or sys.platform != "linux", reason="needs bubblewrap on Linux")]
SECRET = "DB_PASSWORD=hunter2-attack-canary"
PROJECT = ('version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env"]\n'
           'policies = { read = "deny", write = "deny" }\n')
ATTACKS = ("open_by_handle_at", "tiocsti", "af_packet", "env_leak", "abstract_socket", "sysv_shm", "hard_link",
           "fork_bomb", "memory", "tmp_size", "write_above_tmp_root")
OLD_FLAGS = ["--new-session", "--die-with-parent", "--unshare-pid"]  # rootguard run's namespaces before issue 30
SYSTEM = ["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
          "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
          "--tmpfs", "/tmp"]


@pytest.fixture(scope="module")
def world():
    """``mono`` in a directory ``nobody`` may traverse (its own, not pytest's shared numbered ones); a hard
    link to the denied ``.env`` made before the run inside the narrow root (an earlier, unconfined session
    could)."""
    base = Path(tempfile.mkdtemp(prefix="rg-attacks-run-", dir="/tmp"))
    os.chmod(base, 0o755)
    repo = make_repo(base / "mono", {".rootguard.toml": PROJECT, ".gitignore": ".env\n",
                                     "packages/app/index.js": "console.log('app')\n"})
    (repo / ".env").write_text(SECRET + "\n")
    app = repo / "packages" / "app"
    os.link(repo / ".env", app / "notes.txt")
    user = base / "user.toml"
    user.write_text("version = 2\n")
    limits = base / "limits.toml"
    limits.write_text('version = 2\n[sandbox]\nprocesses = 64\nmemory = "256M"\ntmp_size = "16M"\n')
    for path in [base, *base.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    yield {"base": base, "repo": repo, "app": app, "env": repo / ".env", "user": user, "limits": limits}
    shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------------------------------ running


def _nobody() -> list[str]:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root to switch to nobody with setpriv")
    uid = int(subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True, check=True).stdout)
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


def _rootguard(user: str) -> list[str]:
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("needs root")
        return [sys.executable, "-m", "lsp_bridge.cli.main"]
    system = "/usr/bin/python3"
    version = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if version.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip("no system Python of the test's version to run rootguard as nobody")
    import site

    checkout = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join([checkout, *site.getsitepackages()])
    return [*_nobody(), "env", f"PYTHONPATH={path}", system, "-m", "lsp_bridge.cli.main"]


def env_for(world, config=None, **extra) -> dict:
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "HOME": "/nonexistent",
           "ROOTGUARD_CONFIG": str(config or world["user"])}
    env.update(extra)
    return env


def rg_run(world, user, argv, *, config=None, env=None, timeout=60, **kw) -> subprocess.CompletedProcess:
    """``rootguard run --root mono/packages/app -- ARGV`` as ``user``."""
    return subprocess.run([*_rootguard(user), "run", "--root", str(world["app"]), "--", *argv], capture_output=True,
                          text=True, cwd=world["app"], timeout=timeout, env=env or env_for(world, config), **kw)


def bare(world, argv, *, extra=(), timeout=60, **kw) -> subprocess.CompletedProcess:
    """Bare bubblewrap as root with the old flags: the root bound, ``.env`` masked."""
    app, env = str(world["app"]), str(world["env"])
    mounts = ["--ro-bind", str(world["repo"]), str(world["repo"]), "--bind", app, app, "--ro-bind", "/dev/null", env]
    return subprocess.run([BWRAP, *SYSTEM, *mounts, *extra, *OLD_FLAGS, "--chdir", app, "--", *argv],
                          capture_output=True, text=True, timeout=timeout, **kw)


USERS = ["root", "nobody"]


def py(code: str) -> list[str]:
    return ["python3", "-c", textwrap.dedent(code)]


# ------------------------------------------------------------------------ class 2: root's capabilities

HANDLE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
raw = bytes.fromhex(sys.argv[1])
buf = ctypes.create_string_buffer(raw, len(raw))
mount = os.open(".", os.O_RDONLY)
fd = libc.syscall(304, mount, buf, os.O_RDONLY)
if fd < 0:
    print("refused", ctypes.get_errno())
else:
    print("read:", os.read(fd, 200).decode())
"""


def _handle(path: Path) -> str:
    """``name_to_handle_at`` on the host: the bytes an attacker needs (stable for the file's life)."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    ctypes.c_uint.from_buffer(buf).value = 128
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, os.fsencode(str(path)), buf, ctypes.byref(mount_id), 0) != 0:
        pytest.skip(f"no file handles on this file system ({os.strerror(ctypes.get_errno())})")
    size = ctypes.c_uint.from_buffer(buf).value
    return buf.raw[:8 + size].hex()


def test_open_by_handle_at_unprotected_reads_the_masked_env(world):
    if platform_machine() != "x86_64":
        pytest.skip("the attack script uses x86-64's system call number")
    result = bare(world, ["python3", "-c", HANDLE, _handle(world["env"])])
    assert "cat" not in result.stdout and SECRET in result.stdout, result  # past the /dev/null mask


@pytest.mark.parametrize("user", USERS)
def test_open_by_handle_at_held(world, user):
    if platform_machine() != "x86_64":
        pytest.skip("the attack script uses x86-64's system call number")
    result = rg_run(world, user, ["python3", "-c", HANDLE, _handle(world["env"])])
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout and f"refused {errno.EPERM}" in result.stdout


PACKET = """
import socket
try:
    socket.socket(17, socket.SOCK_RAW, 0)
    print("packet socket open")
except OSError as err:
    print("refused", err.errno)
"""


def test_af_packet_unprotected_opens(world):
    assert "packet socket open" in bare(world, py(PACKET)).stdout


@pytest.mark.parametrize("user", USERS)
def test_af_packet_held(world, user):
    result = rg_run(world, user, py(PACKET))
    assert result.returncode == 0, result.stderr
    assert f"refused {errno.EPERM}" in result.stdout


def test_capabilities_are_dropped_for_root(world):
    result = rg_run(world, "root", ["grep", "^CapEff", "/proc/self/status"])
    assert result.stdout.split() == ["CapEff:", "0000000000000000"], result
    assert "CapEff:\t0000000000000000" not in bare(world, ["grep", "^CapEff", "/proc/self/status"]).stdout


# --- TIOCSTI: through a real terminal

TIOCSTI_CODE = """
import fcntl, termios
try:
    for ch in "echo INJECTED\\n":
        fcntl.ioctl(0, termios.TIOCSTI, ch.encode())
    print("typed into the terminal")
except OSError as err:
    print("refused", err.errno)
"""


def _in_pty(argv: list[str], env: dict, cwd, timeout: float = 30) -> str:
    """Run ``argv`` with a new pseudo-terminal as its controlling terminal; everything it printed."""
    master, slave = pty.openpty()

    def controlling():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                            preexec_fn=controlling)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        os.close(master)
    return out.decode("utf-8", "replace")


def test_tiocsti_unprotected_types_into_the_terminal(world):
    out = _in_pty(["python3", "-c", TIOCSTI_CODE], env_for(world), world["app"])
    assert "typed into the terminal" in out
    bare_out = _in_pty([BWRAP, *SYSTEM, *OLD_FLAGS, "--", "python3", "-c", TIOCSTI_CODE], env_for(world), world["app"])
    assert "typed into the terminal" in bare_out  # root: --new-session does not stop it


@pytest.mark.parametrize("user", USERS)
def test_tiocsti_held(world, user):
    out = _in_pty([*_rootguard(user), "run", "--root", str(world["app"]), "--", "python3", "-c", TIOCSTI_CODE],
                  env_for(world), world["app"])
    assert f"refused {errno.EPERM}" in out and "typed into" not in out, out


# ----------------------------------------------------------------------- class 3: leaks that are not files


def test_env_leak_unprotected(world):
    result = subprocess.run(["sh", "-c", "echo token=${GITHUB_TOKEN:-none}"], capture_output=True, text=True,
                            env=env_for(world, GITHUB_TOKEN="ghp_canary"), timeout=10)
    assert "token=ghp_canary" in result.stdout


@pytest.mark.parametrize("user", USERS)
def test_env_leak_held(world, user):
    env = env_for(world, GITHUB_TOKEN="ghp_canary", AWS_SECRET_ACCESS_KEY="aws-canary", MY_API_KEY="key-canary",
                  SOME_UNLISTED="x")
    result = rg_run(world, user, ["sh", "-c", "env"], env=env)
    assert result.returncode == 0, result.stderr
    assert "canary" not in result.stdout and "SOME_UNLISTED" not in result.stdout
    assert "ROOTGUARD_SANDBOX=1" in result.stdout and "PATH=" in result.stdout


def test_env_grant_passes_a_named_secret_but_never_through_a_pattern(world):
    config = world["base"] / "grants.toml"
    config.write_text('version = 2\n[sandbox]\nenv = ["GITHUB_TOKEN", "MY_*"]\n')
    env = env_for(world, config, GITHUB_TOKEN="ghp_granted", MY_TOOL_TOKEN="pattern-canary", MY_FLAG="on")
    result = rg_run(world, "root", ["sh", "-c", "env"], env=env)
    assert "GITHUB_TOKEN=ghp_granted" in result.stdout and "MY_FLAG=on" in result.stdout
    assert "pattern-canary" not in result.stdout


def test_a_project_file_may_not_grant_variables(world, tmp_path):
    repo = make_repo(tmp_path / "proj", {".rootguard.toml": 'version = 2\n[sandbox]\nenv = ["GITHUB_TOKEN"]\n'})
    result = subprocess.run([*_rootguard("root"), "run", "--root", str(repo), "--", "true"], capture_output=True,
                            text=True, cwd=repo, timeout=60, env=env_for(world))
    assert result.returncode == 125
    assert ".rootguard.toml:3:" in result.stderr and "sandbox.env" in result.stderr


ABSTRACT_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(b"\\0" + sys.argv[1].encode())
    print("connected:", s.recv(100).decode())
except OSError as err:
    print("refused", err.errno)
"""


@pytest.fixture
def abstract_listener():
    name = f"rootguard-test-{secrets.token_hex(6)}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(b"\0" + name.encode())
    server.listen(8)
    server.settimeout(0.2)
    stop = False
    import threading

    def serve():
        while not stop:
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            conn.sendall(b"host-secret-display")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield name
    stop = True
    thread.join(timeout=2)
    server.close()


def test_abstract_socket_unprotected_connects(world, abstract_listener):
    result = bare(world, py(ABSTRACT_CLIENT) + [abstract_listener])
    assert "connected: host-secret-display" in result.stdout


@pytest.mark.parametrize("user", USERS)
def test_abstract_socket_held(world, user, abstract_listener):
    from lsp_bridge.sandbox.shim import SCOPE_ABI, abi

    if abi() < SCOPE_ABI:
        printed = subprocess.run([*_rootguard("root"), "run", "--root", str(world["app"]), "--print", "--", "true"],
                                 capture_output=True, text=True, timeout=60, env=env_for(world))
        assert "not enforced: abstract unix sockets" in printed.stderr
        pytest.skip(f"Landlock ABI {abi()} has no scoping (said in --print)")
    result = rg_run(world, user, py(ABSTRACT_CLIENT) + [abstract_listener])
    assert result.returncode == 0, result.stderr
    assert "host-secret-display" not in result.stdout and f"refused {errno.EPERM}" in result.stdout


SHM_READER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(int(sys.argv[1]), 0, 0)
if shmid < 0:
    print("not found", ctypes.get_errno())
else:
    addr = libc.shmat(shmid, None, 0o10000)  # SHM_RDONLY
    print("read:", ctypes.string_at(addr, 32).rstrip(b"\\0").decode())
"""


@pytest.fixture
def host_shm():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key = int.from_bytes(secrets.token_bytes(3), "big") + 0x1000
    shmid = libc.shmget(key, 4096, 0o1000 | 0o666)  # IPC_CREAT
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    addr = libc.shmat(shmid, None, 0)
    ctypes.memmove(addr, b"shm-canary-value", 16)
    libc.shmdt(ctypes.c_void_p(addr))
    yield key
    libc.shmctl(shmid, 0, None)  # IPC_RMID


def test_sysv_shm_unprotected_reads_the_hosts_segment(world, host_shm):
    assert "read: shm-canary-value" in bare(world, py(SHM_READER) + [str(host_shm)]).stdout


@pytest.mark.parametrize("user", USERS)
def test_sysv_shm_held(world, user, host_shm):
    result = rg_run(world, user, py(SHM_READER) + [str(host_shm)])
    assert result.returncode == 0, result.stderr
    assert "shm-canary" not in result.stdout and f"not found {errno.ENOENT}" in result.stdout


# ------------------------------------------------------------------- class 4: a hard link to a denied file


def test_hard_link_unprotected_reads_the_secret(world):
    assert SECRET in subprocess.run(["cat", "notes.txt"], cwd=world["app"], capture_output=True, text=True).stdout


@pytest.mark.parametrize("user", USERS)
def test_hard_link_held(world, user):
    result = rg_run(world, user, ["sh", "-c", "cat notes.txt 2>&1; echo done"])
    assert "done" in result.stdout, result.stderr
    assert SECRET not in result.stdout


# ------------------------------------------------------------------------------------- limits

FORK = """
import os, time
made = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    made += 1
print("forked", made)
"""


def test_fork_bomb_unprotected_is_unbounded(world):
    result = subprocess.run(py(FORK), capture_output=True, text=True, timeout=60)
    assert "forked 300" in result.stdout


@pytest.mark.parametrize("user", USERS)
def test_fork_bomb_held(world, user):
    result = rg_run(world, user, py(FORK), config=world["limits"])
    assert result.returncode == 0, result.stderr
    made = int(result.stdout.split()[-1])
    assert made < 64, result.stdout


MEMORY = """
try:
    block = bytearray(512 << 20)
    print("allocated", len(block) >> 20, "MiB")
except MemoryError:
    print("refused: MemoryError")
"""


def test_memory_unprotected_allocates(world):
    assert "allocated 512 MiB" in subprocess.run(py(MEMORY), capture_output=True, text=True, timeout=60).stdout


@pytest.mark.parametrize("user", USERS)
def test_memory_held(world, user):
    result = rg_run(world, user, py(MEMORY), config=world["limits"])
    assert result.returncode == 0, result.stderr
    assert "refused: MemoryError" in result.stdout


TMP_FILL = "head -c 33554432 /dev/zero > /tmp/fill && echo filled || echo refused"


def test_tmp_size_unprotected_fills(world):
    assert "filled" in bare(world, ["sh", "-c", TMP_FILL]).stdout


@pytest.mark.parametrize("user", USERS)
def test_tmp_size_held(world, user):
    result = rg_run(world, user, ["sh", "-c", TMP_FILL], config=world["limits"])
    assert "refused" in result.stdout and "No space left on device" in result.stderr


def test_bad_limit_names_file_and_field(world):
    config = world["base"] / "bad.toml"
    config.write_text('version = 2\n[sandbox]\nmemory = "lots"\n')
    result = subprocess.run([*_rootguard("root"), "check", "--op", "read", "--root", str(world["app"]), str(world["app"])],
                            capture_output=True, text=True, timeout=60, env=env_for(world, config))
    assert result.returncode == 2
    assert f"{config}:3:" in result.stderr and "sandbox.memory" in result.stderr


# ------------------------------------------------- issue 32 point 6: a root under /tmp, an absent project file


def test_write_above_tmp_root_unprotected_vanishes(world):
    above = world["repo"] / "packages"  # the old profile: a private /tmp, the narrow root bound inside it
    old = subprocess.run([BWRAP, *SYSTEM, "--bind", str(world["app"]), str(world["app"]), *OLD_FLAGS, "--",
                          "sh", "-c", f"echo x > {above}/new.txt && echo written"],
                         capture_output=True, text=True, timeout=30)
    assert "written" in old.stdout and not (above / "new.txt").exists()  # "succeeded", and vanished


@pytest.mark.parametrize("user", USERS)
def test_write_above_tmp_root_held(world, user):
    above = world["repo"] / "packages"
    assert str(above).startswith("/tmp/")
    result = rg_run(world, user, ["sh", "-c", f"echo x > {above}/new.txt && echo written; echo ok > /tmp/mine && "
                                              "cat /tmp/mine"])
    assert "written" not in result.stdout and "Read-only file system" in result.stderr
    assert "ok" in result.stdout  # /tmp itself stays a private, writable /tmp


def test_no_not_enforceable_line_for_an_absent_project_file_and_creating_it_is_stopped(world, tmp_path):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "index.js").write_text("1\n")
    plain = subprocess.run(["sh", "-c", "echo 'version = 2' > .rootguard.toml && echo made"], cwd=root,
                           capture_output=True, text=True, timeout=10)
    assert "made" in plain.stdout
    (root / ".rootguard.toml").unlink()
    quiet = subprocess.run([*_rootguard("root"), "run", "--root", str(root), "--", "true"], capture_output=True,
                           text=True, cwd=root, timeout=60, env=env_for(world))
    assert quiet.returncode == 0 and "not enforceable" not in quiet.stderr, quiet.stderr
    made = subprocess.run([*_rootguard("root"), "run", "--root", str(root), "--", "sh", "-c",
                           "echo '[[paths]]' > .rootguard.toml; sleep 5"], capture_output=True, text=True, cwd=root,
                          timeout=60, env=env_for(world))
    assert made.returncode == 125 and "stopped the sandbox" in made.stderr, made.stderr
    assert not (root / ".rootguard.toml").exists()  # set aside for the person to look at
    assert any(p.name.startswith(".rootguard.toml.rootguard-held-") for p in root.iterdir())


# ---------------------------------------------------------------- issue 32 point 2: a shell a person can use


def _read_until(master: int, text: bytes, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and text not in out:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                out += os.read(master, 4096)
            except OSError:
                break
    return out


@pytest.mark.parametrize("user", USERS)
def test_interactive_shell_keeps_job_control_and_ctrl_c_interrupts_only_the_foreground(world, user):
    master, slave = pty.openpty()

    def controlling():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    argv = [*_rootguard(user), "run", "--root", str(world["app"]), "--", "bash", "--norc", "--noprofile", "-i"]
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=world["app"],
                            env=env_for(world, TERM="dumb"), preexec_fn=controlling)
    os.close(slave)
    try:
        start = _read_until(master, b"-5.", 30) + _read_until(master, b" ", 5)  # bash-5.2$ or bash-5.2#
        assert b"bash-" in start, start
        assert b"no job control" not in start, start
        os.write(master, b"sleep 30\n")
        time.sleep(1.0)
        os.write(master, b"\x03")
        os.write(master, b"echo al''ive\n")
        after = _read_until(master, b"alive", 15)
        assert b"alive" in after, after
        assert proc.poll() is None  # the session survived the ^C
        os.write(master, b"python3 -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b\"x\")' "
                         b"2>&1 | tail -1\n")
        denied = _read_until(master, b"Operation not permitted", 15)
        assert b"Operation not permitted" in denied, denied
        os.write(master, b"exit 7\n")
        assert proc.wait(timeout=15) == 7
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        os.close(master)


def platform_machine() -> str:
    import platform

    return platform.machine()


# ---------------------------------------------------------------- issue 32 point 3: a private, working home


@pytest.fixture
def home(world):
    home = world["base"] / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".aws").mkdir(exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Person\n")
    (home / ".npmrc").write_text("//registry.npmjs.org/:_authToken=npm_canaryTOKENvalue1234567890\n")
    (home / ".ssh" / "id_ed25519").write_text("ssh-canary\n")
    (home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key=aws-canary\n")
    for path in [home, *home.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return home


HOME_SCRIPT = ("cat ~/.gitconfig; cat ~/.npmrc ~/.ssh/id_ed25519 ~/.aws/credentials 2>&1; "
               "echo mine > ~/.cache-test && cat ~/.cache-test; echo cache=$XDG_CACHE_HOME; "
               "echo x > ~/.gitconfig 2>&1 || echo gitconfig-read-only")


def test_home_unprotected_shows_every_credential(world, home):
    out = subprocess.run(["sh", "-c", HOME_SCRIPT], capture_output=True, text=True, timeout=10,
                         env=env_for(world, HOME=str(home))).stdout
    assert "npm_canary" in out and "ssh-canary" in out and "aws-canary" in out
    (home / ".gitconfig").write_text("[user]\n\tname = Person\n")
    (home / ".cache-test").unlink()


@pytest.mark.parametrize("user", USERS)
def test_private_home_has_harmless_dotfiles_and_no_credentials(world, home, user):
    result = rg_run(world, user, ["sh", "-c", HOME_SCRIPT], env=env_for(world, HOME=str(home)))
    out = result.stdout
    assert "name = Person" in out and "mine" in out and f"cache={home}/.cache" in out, result
    assert "canary" not in out and "gitconfig-read-only" in out
    assert not (home / ".cache-test").exists()  # the home is private: nothing reached the host


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_npm_writes_its_log_in_the_private_home(world, tmp_path):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "package.json").write_text('{"name": "pkg", "version": "1.0.0"}\n')
    env = env_for(world, HOME="/rootguard-test-absent-home", npm_config_update_notifier="false")
    old = subprocess.run([BWRAP, *SYSTEM, "--bind", str(root), str(root), "--remount-ro", "/", *OLD_FLAGS,
                          "--chdir", str(root), "--", "npm", "run", "nope"], capture_output=True, text=True, timeout=60,
                         env=env)
    assert "Log files were not written" in old.stderr  # no ~ in the old sandbox (its / is read-only)
    result = subprocess.run([*_rootguard("root"), "run", "--root", str(root), "--", "npm", "run", "nope"],
                            capture_output=True, text=True, cwd=root, timeout=60, env=env)
    assert result.returncode != 0 and "Missing script" in result.stderr
    assert "Log files were not written" not in result.stderr and "A complete log of this run" in result.stderr


def test_sandbox_settings_merge_and_loosening(tmp_path):
    """A project file may only lower a limit; granting a variable or raising a limit is a loosening."""
    from lsp_bridge.core.config import load_config, loosening

    user = tmp_path / "user.toml"
    user.write_text('version = 2\n[sandbox]\nprocesses = 500\n')
    project = make_repo(tmp_path / "proj", {".rootguard.toml": 'version = 2\n[sandbox]\nprocesses = 9000\n'
                                                               'memory = "1G"\n'})
    config = load_config(str(project), {"ROOTGUARD_CONFIG": str(user)}).config
    assert config is not None
    assert config.sandbox_processes == 500 and config.sandbox_memory == 1 << 30  # 9000 ignored, 1G kept
    user.write_text('version = 2\n[sandbox]\nprocesses = 900\nenv = ["GITHUB_TOKEN"]\n')
    wider = load_config(str(project), {"ROOTGUARD_CONFIG": str(user)}).config
    assert wider is not None
    reasons = loosening(config, wider)
    assert "sandbox.env grants more environment variables" in reasons and "sandbox.processes raised" in reasons
    assert not [r for r in loosening(wider, config) if r.startswith("sandbox.")]  # the way back only narrows


def test_seccomp_filter_fails_closed_on_an_unknown_architecture():
    from lsp_bridge.sandbox import seccomp

    for arch in ("x86_64", "aarch64"):
        assert len(seccomp.program(arch)) % 8 == 0 and seccomp.program(arch)
    with pytest.raises(seccomp.SeccompError, match="no seccomp filter for the 'riscv64' architecture"):
        seccomp.program("riscv64")
