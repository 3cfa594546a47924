"""Run COMMAND inside the profile's sandbox; its exit status is COMMAND's.

bubblewrap gets its options through a file descriptor (``--args FD``, a
memfd), reports through ``--json-status-fd`` whether the sandbox came up, and
execs the Landlock shim, which execs COMMAND. stdin, stdout and stderr are
inherited untouched, so a stdio MCP server runs under it unchanged. Whoever starts
it (root included) the sandbox is the same: a user namespace without capabilities
(``profile.NAMESPACE_ARGS``), the seccomp filter of ``seccomp.py`` (``--seccomp FD``),
the environment allow-list of ``environment.py``, the limits of ``limits.py``. When
stdin is a terminal the command keeps it as its controlling terminal (job control:
an interactive shell works, Ctrl-C reaches its foreground job); TIOCSTI is refused
by the filter instead of by ``--new-session``.

Exit status: COMMAND's own (128+N when it dies of signal N); ``EXIT_UNCONFINED``
(125) with a one-line reason on stderr when confinement cannot be set up or
stopped holding (a masked path replaced on the host). COMMAND never runs
unconfined: without bubblewrap it runs only when the caller asked for the
degraded Landlock-only mode explicitly, and only when Landlock applies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from lsp_bridge.sandbox.profile import Profile

EXIT_UNCONFINED = 125
Judge = Callable[[str], Any]  # why the policy refuses a path just made (None: it allows it): profile.watch_judges
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


class ConfinementError(Exception):
    """Confinement cannot be set up: the runner prints it and exits 125."""


def find_bwrap(env=None) -> str | None:
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which("bwrap", path=path)


def announce(profile: Profile, stderr: TextIO) -> None:
    """At start: one line per hidden request-level path (and how to grant it), then
    the paths the sandbox cannot cover."""
    for hidden in profile.hidden:
        if hidden.decision == "request":
            print(hidden.line(), file=stderr)
    for item in profile.unenforceable:
        print(f"rootguard run: not enforceable: {item.path}: {item.reason}", file=stderr)


def describe(profile: Profile, env: dict | None = None) -> list[str]:
    """What ``--print`` adds on stderr: what the printed command line does not show, and the layers this
    kernel lacks."""
    from lsp_bridge.sandbox import seccomp
    from lsp_bridge.sandbox.environment import sandbox_env
    from lsp_bridge.sandbox.shim import SCOPE_ABI, abi

    host = dict(os.environ if env is None else env)
    _, dropped = sandbox_env(host, profile.settings.env, profile.home)
    lines = [f"not shown: --seccomp FD, the filter rootguard run passes ({seccomp.describe()})",
             "not shown: the environment is an allow-list (docs/confinement.md); "
             + (f"left out here: {', '.join(dropped)}" if dropped else "nothing is left out here")]
    if profile.scope:
        lines.append(f"Landlock ABI {abi()}: abstract unix sockets and signals are scoped to the sandbox")
    else:
        lines.append(f"not enforced: abstract unix sockets outside the sandbox stay reachable (Landlock ABI {abi()}; "
                     f"scoping needs ABI {SCOPE_ABI})")
    if os.geteuid() == 0 and profile.settings.processes:
        lines.append("as root, the process count is bounded by a pids cgroup rootguard run makes (RLIMIT_NPROC "
                     "does not bind uid 0); without one it is not bounded")
    return [*lines, *profile.notes]


def run(profile: Profile, command: Sequence[str], *, env=None, stderr: TextIO = sys.stderr,
        landlock_only: bool = False, judges: tuple[Judge, Judge] | None = None) -> int:
    """Run ``command`` confined by ``profile``; the exit status to return.

    ``judges``: why the policy does not let the command write, and read, a path just made in a
    visible tree (None: it may; ``profile.watch_judges``); such a creation stops the sandbox
    (``watch.SandboxWatch``). Without them only the masks are watched."""
    if not command:
        raise ConfinementError("no COMMAND to run")
    from lsp_bridge.sandbox.environment import sandbox_env

    host = dict(os.environ if env is None else env)
    bwrap = find_bwrap(host)
    env, _dropped = sandbox_env(host, profile.settings.env, profile.home)
    if bwrap is None:
        if landlock_only:
            return _run_landlock_only(profile, command, env, stderr)
        raise ConfinementError(
            "bubblewrap (bwrap) is not installed or not on PATH (Debian: apt-get install bubblewrap); "
            "COMMAND was not run (--landlock-only runs it under Landlock alone, a weaker, labelled mode)"
        )
    if landlock_only:
        print("rootguard run: --landlock-only ignored: bubblewrap is available and enforces more", file=stderr)
    announce(profile, stderr)
    return _run_bwrap(bwrap, profile, command, env, stderr, judges or (_nothing, _nothing))


def _nothing(path: str) -> None:
    return None


def _run_bwrap(bwrap: str, profile: Profile, command: Sequence[str], env: dict, stderr: TextIO,
               judges: tuple[Judge, Judge]) -> int:
    from lsp_bridge.sandbox import seccomp
    from lsp_bridge.sandbox.limits import pids_cgroup

    try:
        bpf = seccomp.program()
    except seccomp.SeccompError as err:
        raise ConfinementError(str(err)) from None
    terminal = _is_terminal(0)
    with pids_cgroup(profile.settings.processes) as group:
        if os.geteuid() == 0 and profile.settings.processes and not group.start():
            print(f"rootguard run: not enforced: the process count ({group.why_not}; RLIMIT_NPROC does not bind "
                  "root)", file=stderr)
        return _run_bwrap_in(bwrap, profile, command, env, stderr, judges, bpf, terminal, group)


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _run_bwrap_in(bwrap: str, profile: Profile, command: Sequence[str], env: dict, stderr: TextIO,
                  judges: tuple[Judge, Judge], bpf: bytes, terminal: bool, group) -> int:
    from lsp_bridge.sandbox.sweep import start_mark, sweep
    from lsp_bridge.sandbox.watch import SandboxWatch

    args_fd = os.memfd_create("rootguard-bwrap-args", 0)
    seccomp_fd = os.memfd_create("rootguard-seccomp", 0)
    status_r, status_w = os.pipe()
    proc: subprocess.Popen | None = None
    stopped: list[str] = []

    def violation(path: str, what: str) -> None:
        stopped.append(f"{path}: {what}")
        if proc is not None and proc.poll() is None:
            proc.kill()  # bwrap --die-with-parent: the whole PID namespace goes with it

    masks, visible, writable = profile.watch_plan()
    watcher = SandboxWatch(masks, visible, writable, *judges, violation)
    try:
        data = b"".join(os.fsencode(a) + b"\0" for a in profile.bwrap_args(terminal=terminal))
        os.write(args_fd, data)
        os.lseek(args_fd, 0, os.SEEK_SET)
        os.write(seccomp_fd, bpf)
        os.lseek(seccomp_fd, 0, os.SEEK_SET)
        since = start_mark()
        watcher.start()  # before the sandbox exists: no window without a watch
        argv = [bwrap, "--args", str(args_fd), "--seccomp", str(seccomp_fd), "--json-status-fd", str(status_w),
                "--", *profile.shim_argv(command)]
        try:
            proc = subprocess.Popen(argv, pass_fds=(args_fd, seccomp_fd, status_w), env=env)
        except OSError as err:
            raise ConfinementError(f"cannot start bubblewrap ({bwrap}): {err.strerror}") from None
        finally:
            group.release()  # bubblewrap was born in the cgroup; this process leaves it
        os.close(status_w)
        status_w = -1
        status: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(status_r, status), daemon=True)
        reader.start()
        if stopped and proc.poll() is None:  # a violation raced the start
            proc.kill()
        previous = _forward_signals(proc)
        try:
            code = proc.wait()
        finally:
            _restore(previous)
        reader.join(timeout=5)
        if not watcher.caught_up():  # the command ended: what it did last must still be judged
            stopped.append("the host-side watch could not confirm it saw the command's last changes "
                           "(the machine is overloaded, or the watch lost events); check the trees it wrote")
        # What the watch could not see (its inotify watches used up by the command) is found all the same.
        fixed = [op.target for op in profile.ops if op.kind != "bind"]
        sweep(writable, fixed, since, lambda path: watcher.seen("created", path, ""), profile.links,
              lambda path: stopped.append(f"{path}: could not be listed after the command, so what the command "
                                          "may have made in it was not checked; look before opening it in an "
                                          "editor or running git there"))
    finally:
        watcher.stop()
        os.close(args_fd)
        os.close(seccomp_fd)
        if status_w >= 0:
            os.close(status_w)
        os.close(status_r)
    if stopped:
        print(f"rootguard run: stopped the sandbox: {stopped[0]}", file=stderr)
        for line in watcher.remedy():
            print(f"rootguard run: {line}", file=stderr)
        return EXIT_UNCONFINED
    started = any("child-pid" in doc for doc in _documents(b"".join(status)))
    if not started:
        raise ConfinementError("bubblewrap could not set up the sandbox (its message is above); COMMAND was not run")
    return 128 - code if code < 0 else code


def _run_landlock_only(profile: Profile, command: Sequence[str], env: dict, stderr: TextIO) -> int:
    from lsp_bridge.sandbox import landlock

    if landlock.abi() <= 0:
        raise ConfinementError("neither bubblewrap nor Landlock is available; COMMAND was not run")
    print("rootguard run: DEGRADED MODE (--landlock-only, no bubblewrap): the file system is limited by Landlock "
          "to the union and the system directories, but masks are NOT enforced (denied files inside a visible "
          "tree are readable), .git and protected files are writable where their tree is, and /tmp is not "
          "private", file=stderr)
    for op in profile.masks:
        if not op.reason.startswith("system"):
            print(f"rootguard run: DEGRADED: not masked: {op.target}", file=stderr)
    announce(profile, stderr)
    shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim.py")
    interpreter = profile.interpreter or sys.executable
    ro = [p for p in profile.landlock_ro if p != "/run/rootguard/landlock-shim.py"] + [shim]
    rw = [p for p in profile.landlock_rw if p != "/tmp"]
    argv = [interpreter, "-I", "-S", shim]
    for flag, paths in (("--ro", ro), ("--rw", rw)):
        for path in paths:
            argv += [flag, path]
    argv += ["--required", "--", *command]
    try:
        proc = subprocess.Popen(argv, env=env, cwd=profile.chdir)
    except OSError as err:
        raise ConfinementError(f"cannot start the Landlock shim: {err.strerror}") from None
    previous = _forward_signals(proc)
    try:
        code = proc.wait()
    finally:
        _restore(previous)
    return 128 - code if code < 0 else code


def _drain(fd: int, out: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        out.append(chunk)


def _documents(data: bytes) -> list[dict]:
    docs = []
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line:
            try:
                docs.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return docs


def _forward_signals(proc: subprocess.Popen):
    previous = {}

    def forward(signum, _frame):
        if proc.poll() is None:
            proc.send_signal(signum)

    if threading.current_thread() is threading.main_thread():
        for sig in _FORWARDED:
            try:
                previous[sig] = signal.signal(sig, forward)
            except (OSError, ValueError):
                pass
    return previous


def _restore(previous) -> None:
    for sig, handler in previous.items():
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError):
            pass
