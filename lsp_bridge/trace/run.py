"""``rootguard trace``: run a command traced, turn "it needs the repo" into named files.

One pass (the default): COMMAND runs under bubblewrap with the whole disk
read-only (``--ro-bind / /``), the session's union writable at its own paths and a
private writable ``$TMPDIR``, in the first root, traced from outside by strace. It
sees everything (it *reads the disk*), so one run finds the complete set of files it
uses outside the union; nothing outside the union (or the private temp dir) can be
changed. It is a sandbox whoever starts it: its own PID namespace and ``/proc`` (no
``/proc/<pid>/root`` of a host process), no controlling terminal (``--new-session``),
no capabilities, its own IPC namespace, the trace's work folder hidden; a time limit
(``--timeout``), after which every process is killed; when COMMAND ends, the PID
namespace ends with it (a daemonised child cannot outlive the trace or hang it), and
the temporary folder is removed.

Exit status of ``rootguard trace``: 0 when the trace ran (COMMAND's own status is
in the report), 125 when it cannot trace here (no strace or bubblewrap, ptrace not
allowed, no user namespaces), 2 for bad input.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from lsp_bridge.core.paths import is_within
from lsp_bridge.trace.analyze import GitDirs, analyze, format_trace
from lsp_bridge.trace.model import TraceResult
from lsp_bridge.trace.strace import Event, parse_log, strace_prefix

__all__ = ["TraceError", "TraceUnavailable", "run_trace", "format_trace", "one_pass_command"]

PREFLIGHT_TIMEOUT = 30


class TraceError(Exception):
    """Bad input (exit 2)."""


class TraceUnavailable(Exception):
    """Tracing cannot be set up here (exit 125); COMMAND was not run."""


def _tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if not found:
        raise TraceUnavailable(f"{name} is not installed (install the {package} package; scripts/bootstrap.sh "
                               "does); the command was not run")
    return found


def preflight(strace: str, bwrap: str) -> None:
    """Can we ptrace, and can bubblewrap build a sandbox? Say exactly which one fails."""
    probe = subprocess.run([strace, "-f", "-qq", "-e", "trace=none", "--", "true"], capture_output=True, text=True,
                           timeout=PREFLIGHT_TIMEOUT)
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise TraceUnavailable(f"ptrace is not allowed here ({why}); the command was not run. "
                               "Containers often need --cap-add SYS_PTRACE or a seccomp profile that allows ptrace.")
    box = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"],
                         capture_output=True, text=True, timeout=PREFLIGHT_TIMEOUT)
    if box.returncode != 0:
        why = (box.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise TraceUnavailable(f"bubblewrap cannot build a sandbox here ({why}); the command was not run")


DEFAULT_TIMEOUT = 600.0


def one_pass_command(bwrap: str, union: Sequence[str], cwd: str, private_tmp: str, argv: Sequence[str],
                     work: str | None = None, read_only: Sequence[str] = ()) -> list[str]:
    """The bubblewrap command line: disk read-only, union and a private TMPDIR writable; its own PID and
    IPC namespaces and ``/proc``, no terminal, no capabilities; ``work`` (the strace log's folder) hidden.

    ``read_only``: union entries that stay read-only (a git directory a ``[workspace] git`` rule
    grants), and every ``.git`` at the top of a writable entry stays read-only too: what git runs
    (hooks, ``core.fsmonitor`` in its config) would act on the person's next ``git`` command."""
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--proc", "/proc", "--new-session", "--die-with-parent", "--cap-drop", "ALL"]
    if work is not None:
        cmd += ["--tmpfs", work]
    for entry in union:
        if entry in read_only:
            continue  # already read-only: the disk is
        cmd += ["--bind", entry, entry]
        marker = os.path.join(entry, ".git")
        if os.path.lexists(marker) and not os.path.islink(marker):
            cmd += ["--ro-bind", marker, marker]
    cmd += ["--bind", private_tmp, private_tmp, "--setenv", "TMPDIR", private_tmp,
            "--chdir", cwd, "--", *argv]
    return cmd


def _run_bounded(full: list[str], *, capture: bool, timeout: float, env: dict[str, str] | None = None,
                 pass_fds: tuple[int, ...] = ()) -> tuple[int, bytes, bool]:
    """Run the traced sandbox in its own process group; kill the group at ``timeout``.

    Returns (exit status, captured output, timed out). Output is read until COMMAND's
    sandbox is gone, never longer than ``timeout``: a child that keeps the pipe open
    dies with the PID namespace or with the group."""
    import signal

    sink = subprocess.PIPE if capture else sys.stderr.fileno()
    proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT if capture else sink,
                            start_new_session=True, env=env, pass_fds=pass_fds)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # nothing of the group outlives the trace
        except ProcessLookupError:
            pass
    return proc.returncode, out or b"", timed_out


def _run_round(profile, bwrap: str, log: str, argv: list[str], host_env: dict[str, str], *, capture: bool,
               timeout: float) -> tuple[int, bytes, bool]:
    """One ``--enforced`` round: the profile's command line with ``rootguard run``'s seccomp filter and
    environment allow-list (``sandbox/runner.py``), traced; strace, outside the sandbox, passes the
    filter's descriptor on to bubblewrap."""
    from lsp_bridge.sandbox.environment import sandbox_env

    filter_fd = _seccomp_fd()
    try:
        full = strace_prefix(log) + [bwrap, "--seccomp", str(filter_fd), *profile.bwrap_args(),
                                     "--", *profile.shim_argv(argv)]
        confined_env, _dropped = sandbox_env(host_env, profile.settings.env, profile.home)
        return _run_bounded(full, capture=capture, timeout=timeout, env=confined_env, pass_fds=(filter_fd,))
    finally:
        os.close(filter_fd)


def _seccomp_fd() -> int:
    """A descriptor holding ``rootguard run``'s seccomp filter, for bubblewrap's ``--seccomp FD``."""
    from lsp_bridge.sandbox import seccomp

    try:
        program = seccomp.program()
    except seccomp.SeccompError as err:
        raise TraceUnavailable(str(err)) from None
    fd = os.memfd_create("rootguard-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _remove(path: str) -> None:
    """Remove the work folder, whatever modes COMMAND gave what it left there."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    for top, dirs, _files in os.walk(path):
        for name in dirs:
            target = os.path.join(top, name)
            if os.path.islink(target):
                continue  # a link COMMAND planted: never chmod what it points to
            try:
                os.chmod(target, 0o700)
            except OSError:
                pass
    os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def run_trace(session, command: Sequence[str], *, enforced: bool = False, capture: bool = False,
              timeout: float = DEFAULT_TIMEOUT) -> TraceResult:
    """Trace COMMAND; its output goes to stderr, or with ``capture`` into ``result.output`` (its tail)."""
    if timeout <= 0:
        raise TraceError(f"--timeout must be a positive number of seconds, got {timeout}")
    if enforced:
        return run_enforced(session, command, capture=capture, timeout=timeout)
    roots = list(session.folders)
    if not roots:
        raise TraceError("trace needs at least one --root FOLDER")
    union = list(session.scope.union.paths)
    program = _program(command[0], roots[0])
    strace = _tool("strace", "strace")
    bwrap = _tool("bwrap", "bubblewrap")
    preflight(strace, bwrap)
    cwd = roots[0]
    work = tempfile.mkdtemp(prefix="rootguard-trace-")
    try:
        private_tmp = os.path.join(work, "tmp")
        os.mkdir(private_tmp)
        log = os.path.join(work, "strace.log")
        argv = [program, *command[1:]]
        git_entries = [e.path for e in session.scope.union.entries if e.origin == "git"]
        full = strace_prefix(log) + one_pass_command(bwrap, union, cwd, private_tmp, argv, work, git_entries)
        # COMMAND's output goes to stderr: stdout is the report (and --json stays parseable).
        started = time.time()
        code, out, timed_out = _run_bounded(full, capture=capture, timeout=timeout)
        events = [e for e in parse_log(log, cwd, program) if not is_within(e.path, work)]
        result = analyze_events(events, session, [*command], code, started=started)
        result.timed_out = timed_out
        if capture:
            result.output = out.decode("utf-8", "replace")[-4000:]
        return result
    finally:
        _remove(work)


def _program(name: str, cwd: str) -> str:
    """COMMAND's executable: from PATH, or a path relative to the first root (where it runs)."""
    if "/" in name:
        path = name if os.path.isabs(name) else os.path.join(cwd, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
        raise TraceError(f"{name}: not an executable file (relative paths are taken from the first root, {cwd})")
    found = shutil.which(name)
    if found is None:
        raise TraceError(f"{name}: command not found")
    return os.path.abspath(found)


def analyze_events(events: list[Event], session, command: list[str], exit_code: int, *,
                   enforced: bool = False, started: float | None = None) -> TraceResult:
    """The proposal, already checked with the engine (``proposal.validate``)."""
    from lsp_bridge.core.config import user_config_path
    from lsp_bridge.trace.proposal import validate

    union = list(session.scope.union.paths)
    result = analyze(events, roots=list(session.folders), union=union, command=command, exit_code=exit_code,
                     policy=session.policy, git=GitDirs.of(union), enforced=enforced, started=started)
    user_file = next((c.user_file for _, c in session.configs() if getattr(c, "user_file", None)), None)
    try:
        result.user_file = user_file or user_config_path(session.env)
    except ValueError:
        result.user_file = ""
    validate(session, result)
    return result


MAX_ROUNDS = 10


def run_enforced(session, command: Sequence[str], *, capture: bool = False,
                 timeout: float = DEFAULT_TIMEOUT) -> TraceResult:
    """Rounds under the real narrow sandbox of ``rootguard run``.

    Round 1 runs COMMAND under the session's own profile; every file it looked for
    and did not find (``ENOENT``) outside the union that exists on the host, and every
    file it read there, is proposed; the next round runs with those grants added (a
    temporary user file: the real one with the proposal merged by the one writer,
    ``core.grants.merge_text``), until a round adds nothing. Only grants that passed
    the checks of ``analyze`` and the engine (``proposal.validate``, run again on the
    whole proposal before each round) are ever applied. ``timeout`` bounds every round.
    """
    from lsp_bridge.core.config import user_config_path
    from lsp_bridge.core.grants import GrantError, merge_text
    from lsp_bridge.core.session import open_session
    from lsp_bridge.sandbox.profile import ProfileError, build_profile
    from lsp_bridge.trace.model import mounts, rules
    from lsp_bridge.trace.proposal import validate

    roots = list(session.folders)
    if not roots:
        raise TraceError("trace needs at least one --root FOLDER")
    program = _program(command[0], roots[0])
    strace = _tool("strace", "strace")
    bwrap = _tool("bwrap", "bubblewrap")
    preflight(strace, bwrap)
    try:
        real_user_file = user_config_path(session.env)
    except ValueError as err:
        raise TraceError(str(err)) from None
    base_text: str | None = None
    if os.path.isfile(real_user_file):
        with open(real_user_file, encoding="utf-8") as fh:
            base_text = fh.read()
    work = tempfile.mkdtemp(prefix="rootguard-trace-")
    events: list[Event] = []
    result: TraceResult | None = None
    proposed: set[tuple[str, str]] = set()
    output = b""
    try:
        for round_no in range(1, MAX_ROUNDS + 1):
            grants_file = os.path.join(work, f"user-{round_no}.toml")
            text = base_text if base_text is not None else "version = 2\n"
            if result is not None:
                validate(session, result)  # re-validated before each round: only checked grants are applied
                try:
                    merged, _ = merge_text(text, grants_file, rules(result), mounts(result))
                except GrantError as err:
                    raise TraceError(f"round {round_no}: the proposal cannot be applied: {err}") from None
                text = merged if merged is not None else text
            with open(grants_file, "w", encoding="utf-8") as fh:
                fh.write(text)
            env = dict(session.env)
            env["ROOTGUARD_CONFIG"] = grants_file
            round_session = open_session(list(session.folders), env)
            broken = [d for d in round_session.diagnostics if d.severity == "error"]
            if broken:
                raise TraceError(f"invalid configuration in round {round_no}: {broken[0].format()}")
            try:
                profile = build_profile(round_session, cwd=roots[0])
            except ProfileError as err:
                raise TraceUnavailable(f"the sandbox cannot be built: {err}") from None
            log = os.path.join(work, f"strace-{round_no}.log")
            started = time.time()
            code, output, timed_out = _run_round(profile, bwrap, log, [program, *command[1:]], session.env,
                                                 capture=capture, timeout=timeout)
            events += [e for e in parse_log(log, roots[0], program) if not is_within(e.path, work)]
            result = analyze_events(events, session, [*command], code, enforced=True, started=started)
            result.rounds = round_no
            result.timed_out = timed_out
            now = {(g.path, g.kind) for g in result.grants}
            added = len(now - proposed)
            print(f"rootguard trace: round {round_no}: exit {code}, {added} new grant"
                  f"{'' if added == 1 else 's'}", file=sys.stderr)
            if now <= proposed or timed_out:
                break
            proposed |= now
        assert result is not None
        if capture:
            result.output = output.decode("utf-8", "replace")[-4000:]
        return result
    finally:
        _remove(work)
