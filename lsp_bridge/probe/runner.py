"""``rootguard probe``: the boundary test matrix for any stdio MCP server.

Starts SERVER_COMMAND (``{root}`` replaced by the fixture's narrow root, working
directory the fixture's base) with the official mcp SDK client, lists its tools,
and calls every path-taking tool once per path slot and target kind. After each
call it looks for a breach: the content marker or the listing token in the
answer, outside content copied into the root, or anything outside the root
created, changed or removed; then it restores the fixture.

Every other string argument of every tool (``ref``, ``query``, ``content``...) is
fuzzed with the same targets, whatever its name: a server that reads a path from an
argument not called "path" is caught too. Answers are inspected block by block,
``structuredContent`` and ``_meta`` included, for the canaries in transformed forms
(``canaries.evidence``). With ``--trace`` the strace log goes through a pipe the server
never holds (``_TraceLog``), read with a time limit.

A path-taking tool is *untested* when the probe could not send every case and
get an answer (an argument it cannot build, a timeout, a broken transport).
Exit 1 when a tool went untested or anything outside the root was served.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsp_bridge.probe.canaries import evidence
from lsp_bridge.probe.fixture import KINDS, Fixture
from lsp_bridge.probe.schema import CannotBuild, build_object, find_slots, find_string_slots, project_argument, put

CALL_TIMEOUT = 30.0
START_TIMEOUT = 60.0


class ProbeError(Exception):
    """The probe could not run (bad command, server failed to start): exit 2."""


@dataclass
class Case:
    tool: str
    arg: str
    kind: str
    target: str
    outcome: str = "untested"  # permitted | refused | error
    detail: str = ""
    leaked: bool = False
    evidence: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"tool": self.tool, "arg": self.arg, "target": self.target, "kind": self.kind,
                "outcome": self.outcome, "leaked": self.leaked, "detail": self.detail, "evidence": self.evidence}


@dataclass
class ToolReport:
    name: str
    path_args: list[str]
    cases: list[Case] = field(default_factory=list)
    skipped: str = ""
    string_args: list[str] = field(default_factory=list)  # other string arguments, fuzzed too

    @property
    def untested(self) -> bool:
        return bool(self.path_args or self.string_args) and (
            bool(self.skipped) or any(c.outcome in ("error", "untested") for c in self.cases))

    def to_json(self) -> dict:
        data: dict[str, Any] = {"name": self.name, "path_args": self.path_args, "string_args": self.string_args,
                                "cases": [c.to_json() for c in self.cases]}
        if self.skipped:
            data["skipped"] = self.skipped
        return data


@dataclass
class ProbeReport:
    command: list[str]
    server: str
    protocol: str
    project_mode: bool
    tools: list[ToolReport]
    opened_outside: list[dict] | None = None

    @property
    def untested(self) -> list[str]:
        return [t.name for t in self.tools if t.untested]

    @property
    def served_outside(self) -> list[Case]:
        return [c for t in self.tools for c in t.cases if c.leaked]

    @property
    def ok(self) -> bool:
        return not self.untested and not self.served_outside

    def to_json(self) -> dict:
        data: dict[str, Any] = {
            "server": self.server, "protocol": self.protocol, "project_mode": self.project_mode,
            "tools": [t.to_json() for t in self.tools],
            "untested": self.untested,
            "served_outside": [c.to_json() for c in self.served_outside],
            "ok": self.ok,
        }
        if self.opened_outside is not None:
            data["opened_outside"] = self.opened_outside
        return data


def substitute(command: Sequence[str], root: str) -> list[str]:
    if not command:
        raise ProbeError("probe needs a server command after --, e.g. rootguard probe -- rootguard mcp --root {root}")
    if not any("{root}" in a for a in command):
        print("rootguard probe: note: no {root} in the server command; the server is not told the narrow root",
              file=sys.stderr)
    return [a.replace("{root}", root) for a in command]


TRACE_READ_TIMEOUT = 30.0


class _TraceLog:
    """strace's output through a pipe, never a file.

    strace opens the probe's write end as ``/proc/<probe>/fd/W`` (strace keeps its
    output close-on-exec, so the server never inherits it), and the probe closes its own
    write end once the server answered ``initialize``: from then on no path names the
    pipe, and there is nothing to truncate or replace with a FIFO. A thread drains it
    while the probe runs (strace never blocks on a full pipe); the text is collected with
    a time limit after the server ended (a process that kept a copy cannot hang the probe).
    Not prevented: during start-up a server of the same user could open that path too and
    append forged lines (more events, never fewer), or kill its tracer (the log then ends
    early)."""

    def __init__(self) -> None:
        import threading

        self.read_fd, self.write_fd = os.pipe()
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def wrap(self, argv: list[str]) -> list[str]:
        from lsp_bridge.trace.strace import STRACE_ARGS

        return ["strace", *STRACE_ARGS, "-o", f"/proc/{os.getpid()}/fd/{self.write_fd}", "--", *argv]

    def started(self) -> None:
        """The server (and its strace) runs: our copy of the write end can go."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    def text(self) -> str | None:
        """Everything strace wrote, or None when it did not end within the time limit."""
        self.started()
        self.thread.join(TRACE_READ_TIMEOUT)
        done = not self.thread.is_alive()
        if done:
            os.close(self.read_fd)
        return b"".join(self.chunks).decode("utf-8", "surrogateescape") if done else None


def run_probe(command: Sequence[str], *, trace: bool = False, env: dict[str, str] | None = None) -> ProbeReport:
    """Build the fixture, probe the server, remove the fixture."""
    import anyio

    fixture = Fixture.create()
    log: _TraceLog | None = None
    try:
        argv = substitute(command, fixture.root)
        if trace:
            if not shutil.which("strace"):
                raise ProbeError("--trace needs strace (install the strace package; scripts/bootstrap.sh does)")
            log = _TraceLog()
            argv = log.wrap(argv)
        report = anyio.run(_probe, argv, fixture, env, log)
        if log is not None:
            text = log.text()
            report.opened_outside = _opened_outside(text, fixture) if text is not None else [
                {"path": "(strace log)", "ops": [f"not complete within {TRACE_READ_TIMEOUT:.0f} s"]}]
        return report
    finally:
        fixture.remove()
        if log is not None and log.write_fd >= 0:
            os.close(log.write_fd)


def _opened_outside(text: str, fixture: Fixture) -> list[dict]:
    """Paths in the fixture but outside the root that the server's processes touched (from strace)."""
    from lsp_bridge.core.paths import is_within
    from lsp_bridge.trace.strace import collect, parse_lines

    events = parse_lines(text.splitlines(), fixture.base)
    found = []
    for item in collect(events):
        path = item["path"]
        if is_within(path, fixture.base) and not is_within(path, fixture.root) and path != fixture.base:
            rel = os.path.relpath(path, fixture.base)
            found.append({"path": rel, "what": fixture.describe(rel), "ops": item["ops"]})
    return found


async def _probe(argv: list[str], fixture: Fixture, env: dict[str, str] | None, log: _TraceLog | None = None
                 ) -> ProbeReport:
    from mcp import Client, StdioServerParameters

    program = shutil.which(argv[0]) or argv[0]
    params = StdioServerParameters(command=program, args=argv[1:], cwd=fixture.base,
                                   env=dict(env if env is not None else os.environ))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            async with Client(params, read_timeout_seconds=CALL_TIMEOUT) as client:
                info = getattr(client, "server_info", None)
                server = _server_name(info)
                protocol = str(getattr(client, "protocol_version", "") or "")
                if log is not None:
                    log.started()  # strace has its output open: no path names the pipe any more
                listed = await client.list_tools()
                tools = list(listed.tools)
                project = await _project_id(client, tools)
                reports = []
                for tool in tools:
                    reports.append(await _probe_tool(client, tool, fixture, project))
                return ProbeReport(argv, server, protocol, project is not None, reports)
        except ProbeError:
            raise
        except Exception as err:  # noqa: BLE001 - a server that fails to start or dies is reported, not raised
            raise ProbeError(f"the server {' '.join(argv)} failed: {_why(err)}") from None


def _server_name(info: Any) -> str:
    if info is None:
        return ""
    name = getattr(info, "name", "") or ""
    version = getattr(info, "version", "") or ""
    return f"{name} {version}".strip()


async def _project_id(client, tools) -> str | None:
    """A project-addressing server's id for the fixture's root: from a schema enum, else list_projects."""
    for tool in tools:
        arg = project_argument(tool.input_schema or {})
        if arg and arg[1]:
            return arg[1][0]
    if any(project_argument(t.input_schema or {}) for t in tools):
        for tool in tools:
            if tool.name in ("list_projects", "list_workspaces", "list_roots"):
                result = await client.call_tool(tool.name, {})
                data = result.structured_content or _json(_text(result)) or {}
                for key in ("projects", "workspaces", "roots"):
                    for entry in data.get(key, []) if isinstance(data, dict) else []:
                        for id_key in ("project_id", "id", "workspace_id", "root_id"):
                            if isinstance(entry, dict) and entry.get(id_key):
                                return str(entry[id_key])
        return "unknown"
    return None


async def _probe_tool(client, tool, fixture: Fixture, project: str | None) -> ToolReport:
    schema = tool.input_schema or {}
    slots = find_slots(tool.name, schema)
    strings = find_string_slots(tool.name, schema, slots)
    report = ToolReport(tool.name, [s.name for s in slots], string_args=[s.name for s in strings])
    if not slots and not strings:
        return report
    relative = project is not None
    try:
        base_args = build_object(schema)
    except CannotBuild as err:
        report.skipped = str(err)
        return report
    proj = project_argument(schema)
    if proj and project is not None:
        base_args[proj[0]] = project
    for slot in [*slots, *strings]:
        for kind in KINDS:
            args = json.loads(json.dumps(base_args))
            for other in slots:
                put(args, other, fixture.default(relative=relative, wants_dir=other.wants_dir,
                                                 destination=other.is_destination))
            target = fixture.target(kind, relative=relative, wants_dir=slot.wants_dir, destination=slot.is_destination)
            put(args, slot, target)
            case = Case(tool.name, slot.name, kind, target)
            await _call(client, tool.name, args, case, fixture)
            report.cases.append(case)
    return report


async def _call(client, name: str, args: dict, case: Case, fixture: Fixture) -> None:
    import anyio
    from mcp.shared.exceptions import MCPError

    try:
        with anyio.fail_after(CALL_TIMEOUT + 5):
            result = await client.call_tool(name, args)
    except MCPError as err:
        case.outcome, case.detail = "refused", f"protocol error: {_why(err)}"
    except (TimeoutError, Exception) as err:  # noqa: BLE001 - recorded as an error, the tool counts as untested
        case.outcome, case.detail = "error", f"no answer: {_why(err)}"
    else:
        text = _result_text(result)
        case.outcome = "refused" if result.is_error or _reports_refusal(text) else "permitted"
        case.detail = _first_line(text)
        dump = result.model_dump(mode="json", by_alias=True)
        case.evidence += evidence(dump, {"outside content": fixture.marker,
                                         "outside directory listing": fixture.token})
    changed = fixture.changes_outside(fixture.snapshot())
    if changed:
        case.evidence.append("changed outside the root: " + ", ".join(changed[:5]))
    imported = fixture.marker_in_root()
    if imported:
        case.evidence.append("outside content copied into the root: " + ", ".join(imported[:5]))
    case.leaked = bool(case.evidence)
    fixture.reset()


REFUSAL_WORDS = re.compile(
    r"\b(error|denied|not allowed|outside (the )?allowed|refused|no such file|does not exist"
    r"|ENOENT|EACCES|EPERM)\b",
    re.IGNORECASE)


def _reports_refusal(text: str) -> bool:
    """A successful result that only reports a failure (e.g. one error line per path of a batch read)."""
    return bool(text) and bool(REFUSAL_WORDS.search(text)) and len(text) < 2000


def _result_text(result) -> str:
    parts = []
    for block in result.content or []:
        for attr in ("text", "data", "blob"):
            value = getattr(block, attr, None)
            if isinstance(value, str):
                parts.append(value)
                if attr in ("data", "blob"):
                    parts.append(_b64(value))
        resource = getattr(block, "resource", None)
        if resource is not None:
            for attr in ("text", "blob"):
                value = getattr(resource, attr, None)
                if isinstance(value, str):
                    parts.append(value if attr == "text" else _b64(value))
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _b64(value: str) -> str:
    import base64
    import binascii

    try:
        return base64.b64decode(value, validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


def _text(result) -> str:
    return "\n".join(getattr(b, "text", "") for b in result.content or [] if getattr(b, "text", None))


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _first_line(text: str, limit: int = 140) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _why(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_why(e) for e in err.exceptions)
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


# ---------------------------------------------------------------------------
# presentation

MARK = {"permitted": "PERMIT", "refused": "refuse", "error": "ERROR", "untested": "-"}


def format_report(report: ProbeReport) -> str:
    lines = [f"rootguard probe: {report.server or 'server'} (protocol {report.protocol or '?'})"
             + (", files addressed by project id and relative path" if report.project_mode else "")]
    kinds = list(KINDS)
    width = max([len(t.name) + 1 + max((len(a) for a in t.path_args + t.string_args), default=0)
                 for t in report.tools] + [10])
    lines.append("")
    lines.append((f"{'tool argument':<{width}}  " + "  ".join(f"{k:<14}" for k in kinds)).rstrip())
    for tool in report.tools:
        if not tool.path_args and not tool.string_args:
            continue
        if tool.skipped:
            lines.append(f"{tool.name:<{width}}  UNTESTED: {tool.skipped}")
            continue
        for arg in tool.path_args + tool.string_args:
            row = {c.kind: c for c in tool.cases if c.arg == arg}
            cells = []
            for k in kinds:
                c = row.get(k)
                cell = "-" if c is None else MARK[c.outcome] + (" LEAK" if c.leaked else "")
                cells.append(f"{cell:<14}")
            lines.append((f"{tool.name + ' ' + arg:<{width}}  " + "  ".join(cells)).rstrip())
    no_paths = [t.name for t in report.tools if not t.path_args and not t.string_args]
    if no_paths:
        lines.append(f"(no string argument: {', '.join(no_paths)})")
    lines.append("")
    for case in report.served_outside:
        lines.append(f"LEAK  {case.tool} {case.arg}={case.target} ({case.kind}): {'; '.join(case.evidence)}")
    for tool in report.tools:
        for case in tool.cases:
            if case.outcome == "error":
                lines.append(f"ERROR {case.tool} {case.arg} ({case.kind}): {case.detail}")
    if report.opened_outside is not None:
        if report.opened_outside:
            lines.append("The server's processes touched, outside the root (strace):")
            lines += [f"  {o['path']}  [{o.get('what', '')}] ({', '.join(o['ops'])})" for o in report.opened_outside]
        else:
            lines.append("strace: the server touched nothing outside the root in the fixture.")
    if report.untested:
        lines.append("untested path-taking tools: " + ", ".join(report.untested))
    lines.append("OK: every path-taking tool was tested and nothing outside the root was served"
                 if report.ok else "FAIL: " + "; ".join(
                     filter(None, [f"{len(report.untested)} untested tool(s)" if report.untested else "",
                                   f"{len(report.served_outside)} case(s) served outside content"
                                   if report.served_outside else ""])))
    return "\n".join(lines)
