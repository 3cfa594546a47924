"""``rootguard trace``: run a command traced, turn "it needs the repo" into named files.

One pass (the default): COMMAND runs under bubblewrap with the whole disk
read-only (``--ro-bind / /``), the session's union writable at its own paths and a
private writable ``$TMPDIR``, in the first root, traced from outside by strace. It
sees everything, so one run finds the complete set of files it uses outside the
union; nothing outside the union (or the private temp dir) can be changed.

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
from collections.abc import Sequence

from lsp_bridge.core.paths import is_within
from lsp_bridge.trace.analyze import GitDirs, TraceResult, analyze, format_trace
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


def one_pass_command(bwrap: str, union: Sequence[str], cwd: str, private_tmp: str, argv: Sequence[str]) -> list[str]:
    """The bubblewrap command line: disk read-only, union and a private TMPDIR writable."""
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for entry in union:
        cmd += ["--bind", entry, entry]
    cmd += ["--bind", private_tmp, private_tmp, "--setenv", "TMPDIR", private_tmp,
            "--chdir", cwd, "--die-with-parent", "--", *argv]
    return cmd


def run_trace(session, command: Sequence[str], *, enforced: bool = False, capture: bool = False) -> TraceResult:
    """Trace COMMAND; its output goes to stderr, or with ``capture`` into ``result.output`` (its tail)."""
    if enforced:
        return run_enforced(session, command, capture=capture)
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
        full = strace_prefix(log) + one_pass_command(bwrap, union, cwd, private_tmp, argv)
        # COMMAND's output goes to stderr: stdout is the report (and --json stays parseable).
        sink = subprocess.PIPE if capture else sys.stderr.fileno()
        proc = subprocess.run(full, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT if capture else sink)
        events = [e for e in parse_log(log, cwd, program) if not is_within(e.path, work)]
        result = analyze_events(events, session, [*command], proc.returncode)
        if capture:
            result.output = (proc.stdout or b"").decode("utf-8", "replace")[-4000:]
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
                   enforced: bool = False) -> TraceResult:
    from lsp_bridge.core.config import user_config_path

    union = list(session.scope.union.paths)
    result = analyze(events, roots=list(session.folders), union=union, command=command, exit_code=exit_code,
                     policy=session.policy, git=GitDirs.of(union), enforced=enforced)
    user_file = next((c.user_file for _, c in session.configs() if getattr(c, "user_file", None)), None)
    try:
        result.user_file = user_file or user_config_path(session.env)
    except ValueError:
        result.user_file = ""
    return result


MAX_ROUNDS = 10


def run_enforced(session, command: Sequence[str], *, capture: bool = False) -> TraceResult:
    """Rounds under the real narrow sandbox of ``rootguard run``.

    Round 1 runs COMMAND under the session's own profile; every file it looked for
    and did not find (``ENOENT``) outside the union that exists on the host, and every
    file it read there, is proposed; the next round runs with those grants added (a
    temporary user file: the real one plus the proposal), until a round adds nothing.
    """
    from lsp_bridge.core.config import user_config_path
    from lsp_bridge.core.session import open_session
    from lsp_bridge.sandbox.profile import ProfileError, build_profile

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
    base_text = ""
    if os.path.isfile(real_user_file):
        with open(real_user_file, encoding="utf-8") as fh:
            base_text = fh.read()
    if "version" not in base_text:
        base_text = "version = 2\n" + base_text
    work = tempfile.mkdtemp(prefix="rootguard-trace-")
    events: list[Event] = []
    result: TraceResult | None = None
    proposed: set[tuple[str, str]] = set()
    output = b""
    try:
        for round_no in range(1, MAX_ROUNDS + 1):
            grants_file = os.path.join(work, f"user-{round_no}.toml")
            with open(grants_file, "w", encoding="utf-8") as fh:
                fh.write(base_text.rstrip("\n") + "\n\n" + (result.snippet_rules() if result else ""))
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
            full = strace_prefix(log) + profile.command_line([program, *command[1:]], bwrap=bwrap)
            sink = subprocess.PIPE if capture else sys.stderr.fileno()
            proc = subprocess.run(full, stdin=subprocess.DEVNULL, stdout=sink,
                                  stderr=subprocess.STDOUT if capture else sink)
            output = proc.stdout or b""
            events += [e for e in parse_log(log, roots[0], program) if not is_within(e.path, work)]
            result = analyze_events(events, session, [*command], proc.returncode, enforced=True)
            result.rounds = round_no
            now = {(g.path, g.kind) for g in result.grants}
            added = len(now - proposed)
            print(f"rootguard trace: round {round_no}: exit {proc.returncode}, {added} new grant"
                  f"{'' if added == 1 else 's'}", file=sys.stderr)
            if now <= proposed:
                break
            proposed |= now
        assert result is not None
        if capture:
            result.output = output.decode("utf-8", "replace")[-4000:]
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
