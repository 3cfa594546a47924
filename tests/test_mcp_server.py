"""``rootguard mcp`` end to end: the mcp SDK's client over stdio against the real server process.

Each test builds a repository in tmp_path and talks to ``python -m lsp_bridge.cli.main mcp``
(``rootguard mcp``) exactly as an MCP host would: tools/list, tools/call, roots,
elicitation. Approvals use the real tray broker, headless, on a private socket.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from lsp_bridge.mcp.audit import read_records
from tests.conftest import make_repo
from tests.trayproc import start_tray, stop

REPO = Path(__file__).resolve().parents[1]
SERVER = ["-m", "lsp_bridge.cli.main", "mcp"]  # what `rootguard mcp` runs
SECRET = "sk_live_51Hq0ExampleNotARealKey"
P = "orders-api"
CONFIG = """version = 2
[approvals]
timeout_seconds = 10
[[paths]]
id = "dotenv"
path = ".env"
policies = { read = "deny", write = "deny" }
[[paths]]
id = "vault"
path = "vault"
policies = { read = "request", write = "request" }
[[paths]]
id = "docs"
path = "docs"
policies = { read = "allow" }
"""
TOOLS = {"list_projects", "read_file", "list_directory", "search_files", "get_file_info", "write_file",
         "edit_file", "move_file", "delete_file", "apply_patch"}
STARTUP_LIMIT = 30.0


# ---------------------------------------------------------------------------
# Fixtures and helpers


@pytest.fixture
def ws(tmp_path: Path) -> dict[str, Path]:
    """orders-api (a git repo with rules), its neighbours, and places outside it."""
    base = Path(os.path.realpath(tmp_path)) / "ws"
    repo = make_repo(base / "orders-api", {
        "package.json": '{"name": "orders-api"}\n',
        "src/config.ts": "export const retries = 3;\n",
        "src/util.ts": "export const timeoutMs = 500;\n",
        "docs/guide.md": "# Guide\n",
        "vault/notes.txt": "approval needed\n",
        ".rootguard.toml": CONFIG,
    })
    (repo / ".env").write_text(f"STRIPE_KEY={SECRET}\n")
    files = {
        "platform/secrets.env": f"DB_PASSWORD={SECRET}\n",
        "external/token": f"{SECRET}\n",
        "orders-api2/src/config.ts": "a sibling whose name starts like the root\n",
        "secret": f"{SECRET}\n",
        "billing-api/README.md": "billing\n",
        "billing-api/vault/ledger.txt": "ledger\n",
        "billing-api/.rootguard.toml": CONFIG.replace("timeout_seconds = 10", "timeout_seconds = 1"),
    }
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    (repo / "tmp").mkdir()
    (repo / "tmp" / "external-link").symlink_to(base / "external")
    (repo / "sibling-link").symlink_to(base / "orders-api2")
    (repo / "docs" / "current.ts").symlink_to("../src/config.ts")  # governed by "docs": no follow_symlinks
    outside = Path(os.path.realpath(tmp_path)) / "not-a-root"
    outside.mkdir()
    elsewhere = Path(os.path.realpath(tmp_path)) / "cwd"
    elsewhere.mkdir()
    return {"base": base, "repo": repo, "billing": base / "billing-api", "outside": outside, "cwd": elsewhere}


def server_env(tray_socket: Path | None = None) -> dict[str, str]:
    keep = ("HOME", "PATH", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PYTHONPATH"] = str(REPO)
    env["ROOTGUARD_TRAY_SOCKET"] = str(tray_socket) if tray_socket else os.path.join(env["HOME"], "no-tray.sock")
    return env


@asynccontextmanager
async def connect(roots, cwd: Path, *, mirror: bool = False, tray_socket: Path | None = None, **client_args):
    args = [*SERVER, *[a for r in roots for a in ("--root", str(r))], *(["--mirror"] if mirror else [])]
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env(tray_socket), cwd=str(cwd))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots are deprecated in 2026-07-28; we test them on purpose
        async with Client(params, **client_args) as client:
            yield client


class Calls:
    """Calls tools and remembers how many audit lines each decision must produce."""

    def __init__(self, client: Client):
        self.client = client
        self.expected: Counter = Counter()

    async def __call__(self, tool: str, targets: int = 1, **arguments) -> types.CallToolResult:
        result = await self.client.call_tool(tool, arguments)
        data = result.structured_content or {}
        cid = data.get("correlation_id") or (data.get("error") or {}).get("correlation_id")
        if tool != "list_projects":
            assert cid, f"{tool} returned no correlation id: {result}"
            self.expected[cid] += targets
        return result


def code(result: types.CallToolResult) -> str | None:
    return result.structured_content["error"]["code"] if result.is_error else None


def text(result: types.CallToolResult) -> str:
    return result.content[0].text


def audit_records(home: Path) -> list[dict]:
    return read_records(str(home / ".local" / "state" / "rootguard" / "audit.jsonl"))


def audit_text(home: Path) -> str:
    return (home / ".local" / "state" / "rootguard" / "audit.jsonl").read_text()


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and ".git" not in p.parts}


@pytest.fixture
def sock_dir():
    path = tempfile.mkdtemp(prefix="rg-")  # a unix socket path must stay short
    os.chmod(path, 0o700)
    yield Path(path)
    subprocess.run(["rm", "-rf", path], check=False, timeout=120)


# ---------------------------------------------------------------------------
# An agent session inside one project: seed 003's cases, the CVE escapes, reads,
# writes, batches, audit, mirror. Each test connects afresh to a fresh workspace
# and checks that the audit log holds exactly one line per decision it caused.


@asynccontextmanager
async def agent(ws, home: Path):
    """A connected client (mirror on) whose calls are checked against the audit log on exit."""
    async with connect([ws["repo"]], ws["cwd"], mirror=True) as client:
        calls = Calls(client)
        yield calls
    log = home / ".local" / "state" / "rootguard" / "audit.jsonl"
    records = audit_records(home) if log.exists() else []
    assert Counter(r["correlation_id"] for r in records) == calls.expected
    assert SECRET not in (log.read_text() if log.exists() else "")


async def test_a_listings_text_is_the_whole_listing_whatever_the_names(ws, isolated_user):
    """The names are in the text only: each line parses back to one entry, the tag its kind,
    for names with spaces, brackets, a '%', unicode, a trailing '(needs approval)' or a tag
    of their own; a name with a line break (which could fake a line) is hidden, never shown."""
    odd = ws["repo"] / "odd"
    odd.mkdir()
    names = ["a b.txt", "[FILE] fake", "100%.txt", "café.md", "x (needs approval)", "(1 entries hidden by policy)"]
    for name in names:
        (odd / name).write_text("x\n")
    (odd / "sub [dir]").mkdir()
    os.symlink("a b.txt", odd / "link to a")
    os.mkfifo(odd / "fifo")
    (odd / "two\nlines").write_text("x\n")
    async with agent(ws, isolated_user) as calls:
        listed = await calls("list_directory", project_id=P, relative_path="odd")
    tags = {"[DIR] ": "directories", "[FILE] ": "files", "[LINK] ": "links", "[OTHER] ": "other"}
    parsed: dict[str, list[str]] = {kind: [] for kind in tags.values()}
    trailer = []
    for line in text(listed).split("\n"):
        tag = next((t for t in tags if line.startswith(t)), None)
        if tag is None:
            trailer.append(line)
        else:
            parsed[tags[tag]].append(line[len(tag):])
    assert parsed == {"directories": ["sub [dir]"], "files": sorted(names), "links": ["link to a"], "other": ["fifo"]}
    assert trailer == ["(1 entries hidden by policy)"]
    listing = listed.structured_content
    assert listing["counts"] == {kind: len(found) for kind, found in parsed.items()}
    assert (listing["hidden"], listing["needs_approval"], listing["truncated"]) == (1, [], False)


async def test_tool_schemas_show_the_boundary(ws, isolated_user):
    """An enum of project ids, a pattern refusing absolute paths and '..'."""
    async with agent(ws, isolated_user) as calls:
        listed = {t.name: t.input_schema for t in (await calls.client.list_tools()).tools}
        assert set(listed) == TOOLS
        props = listed["read_file"]["properties"]
        assert props["project_id"]["enum"] == [P]
        pattern = re.compile(props["relative_path"]["pattern"])
        assert pattern.match("src/config.ts") and pattern.match("..hidden")
        for bad in ("/etc/passwd", "../platform/secrets.env", "docs/../../secret", "C:\\x", ".."):
            assert not pattern.match(bad), bad
        projects = await calls("list_projects")
        assert projects.structured_content == {"projects": [{"project_id": P, "name": P, "origin": "root"}]}


async def test_seed_003_cases_and_the_cve_escapes_are_refused(ws, isolated_user):
    repo, base = ws["repo"], ws["base"]
    async with agent(ws, isolated_user) as calls:
        # Seed 003's six cases, through the tools.
        manifest = await calls("read_file", project_id=P, relative_path="package.json")
        assert text(manifest) == (repo / "package.json").read_text()
        assert code(await calls("read_file", project_id=P, relative_path="../platform/secrets.env")) == "path_outside_project"
        assert code(await calls("read_file", project_id=P, relative_path="docs/%2e%2e/%2e%2e/secret")) == "path_outside_project"
        escape = await calls("read_file", project_id=P, relative_path="tmp/external-link/token")
        assert code(escape) == "path_outside_project"
        unknown = await calls("read_file", project_id="finance-prod", relative_path="package.json")
        assert code(unknown) == "unknown_project"
        assert str(base) not in text(unknown) and P not in text(unknown)  # no scope discovery
        patch = await calls("apply_patch", project_id=P,
                            changes=[{"relative_path": "src/config.ts", "edits": [{"old_text": "= 3", "new_text": "= 5"}]}])
        assert not patch.is_error
        assert "+export const retries = 5;" in patch.structured_content["changes"][0]["diff"]
        outside_patch = await calls("apply_patch", project_id=P, changes=[
            {"relative_path": "../orders-api2/src/config.ts", "content": "owned"}])
        assert code(outside_patch) == "path_outside_project"

        # CVE-2025-53110 (prefix confusion) and CVE-2025-53109 (symlink escape).
        sibling = str(base / "orders-api2" / "src" / "config.ts")
        assert code(await calls("read_file", project_id=P, relative_path=sibling)) == "absolute_path_denied"
        assert code(await calls("read_file", project_id=P, relative_path="sibling-link/src/config.ts")) == "path_outside_project"
        planted = await calls("write_file", project_id=P, relative_path="tmp/external-link/planted.sh", content="x")
        assert code(planted) == "path_outside_project"
        assert not (base / "external" / "planted.sh").exists()
        assert code(await calls("read_file", project_id=P, relative_path="/etc/passwd")) == "absolute_path_denied"
        inside_link = await calls("read_file", project_id=P, relative_path="docs/current.ts")
        assert code(inside_link) == "symlink_not_permitted" and "follow_symlinks" in text(inside_link)


async def test_rules_hide_denied_files_from_reads_listings_and_search(ws, isolated_user):
    """.env is denied, vault needs approval (and nobody can approve here)."""
    async with agent(ws, isolated_user) as calls:
        dotenv = await calls("read_file", project_id=P, relative_path=".env")
        assert code(dotenv) == "policy_denied" and SECRET not in text(dotenv)
        assert code(await calls("read_file", project_id=P, relative_path="vault/notes.txt")) == "no_approver"
        listed = await calls("list_directory", project_id=P)
        listing, lines = listed.structured_content, text(listed).splitlines()
        assert "[DIR] vault (needs approval)" in lines and "[DIR] src" in lines
        assert not any(".env" in line for line in lines) and listing["hidden"] >= 1
        assert listing["needs_approval"] == ["vault"] and ".env" not in json.dumps(listing)
        entries = [line for line in lines if line.startswith("[")]
        assert sum(listing["counts"].values()) == len(entries)
        assert listing["counts"]["directories"] == sum(line.startswith("[DIR] ") for line in entries)
        found = (await calls("search_files", project_id=P, query="export")).structured_content
        assert sorted(m["relative_path"] for m in found["matches"]) == ["src/config.ts", "src/util.ts"]
        leaked = (await calls("search_files", project_id=P, query=SECRET)).structured_content
        # nothing about names it may not show
        assert leaked["matches"] == [] and "hidden" not in leaked and "scanned" not in leaked
        by_name = (await calls("search_files", project_id=P, pattern="*.ts")).structured_content
        assert {m["relative_path"] for m in by_name["matches"]} == {"src/config.ts", "src/util.ts"}


async def test_writes_inside_the_project(ws, isolated_user):
    repo = ws["repo"]
    async with agent(ws, isolated_user) as calls:
        created = await calls("write_file", project_id=P, relative_path="src/new/feature.ts", content="export {};\n")
        assert created.structured_content["created"] is True
        assert (repo / "src" / "new" / "feature.ts").read_text() == "export {};\n"
        edited = await calls("edit_file", project_id=P, relative_path="src/util.ts",
                             edits=[{"old_text": "500", "new_text": "750"}])
        assert "+export const timeoutMs = 750;" in edited.structured_content["diff"]
        assert (repo / "src" / "util.ts").read_text() == "export const timeoutMs = 750;\n"
        ambiguous = await calls("edit_file", project_id=P, relative_path="src/util.ts",
                                edits=[{"old_text": "e", "new_text": "E"}])
        assert code(ambiguous) == "edit_ambiguous"
        info = (await calls("get_file_info", project_id=P, relative_path="src/util.ts")).structured_content
        assert info["type"] == "file" and info["size"] == len("export const timeoutMs = 750;\n")
        moved = await calls("move_file", project_id=P, source="src/new/feature.ts", destination="src/feature.ts")
        assert not moved.is_error and (repo / "src" / "feature.ts").exists()
        assert not (await calls("delete_file", project_id=P, relative_path="src/feature.ts")).is_error
        assert not (repo / "src" / "feature.ts").exists()
        config_write = await calls("write_file", project_id=P, relative_path=".rootguard.toml", content="version = 2\n")
        assert code(config_write) == "no_approver"  # an active configuration file needs approval
    logged = audit_text(isolated_user)
    assert "timeoutMs" not in logged  # no file contents in the log


async def test_a_batch_with_one_denied_target_changes_nothing(ws, isolated_user):
    repo = ws["repo"]
    async with agent(ws, isolated_user) as calls:
        before = snapshot(repo)
        batch = await calls("apply_patch", targets=3, project_id=P, changes=[
            {"relative_path": "src/config.ts", "edits": [{"old_text": "= 3", "new_text": "= 9"}]},
            {"relative_path": "src/added.ts", "content": "export const added = true;\n"},
            {"relative_path": ".env", "content": "STRIPE_KEY=replaced\n"},
        ])
        assert code(batch) == "policy_denied"
        batch_id = batch.structured_content["error"]["correlation_id"]
        assert snapshot(repo) == before
        assert (repo / ".env").read_text() == f"STRIPE_KEY={SECRET}\n"
    batch_lines = {r["relative_path"]: r["code"] for r in audit_records(isolated_user) if r["correlation_id"] == batch_id}
    assert batch_lines == {"src/config.ts": "batch_rejected", "src/added.ts": "batch_rejected", ".env": "policy_denied"}


async def test_the_audit_log_and_the_roots_union_mirror(ws, isolated_user):
    """One line per decision, no secret value or content; the mirror says where the old boundary leaked."""
    async with agent(ws, isolated_user) as calls:
        await calls("read_file", project_id=P, relative_path="package.json")
        await calls("read_file", project_id=P, relative_path="tmp/external-link/token")
        await calls("read_file", project_id=P, relative_path=".env")
        await calls("read_file", project_id=P, relative_path="../platform/secrets.env")
        await calls("apply_patch", project_id=P,
                    changes=[{"relative_path": "src/config.ts", "edits": [{"old_text": "= 3", "new_text": "= 5"}]}])
    records = audit_records(isolated_user)
    logged = audit_text(isolated_user)
    assert SECRET not in logged and "retries" not in logged
    for record in records:
        assert record["client"] == "mcp" and record["protocol_version"] == "2026-07-28"
        assert record["tool"] in TOOLS and record["decision"] in ("allow", "deny")
    by_path = {(r["tool"], r["relative_path"]): r for r in records if r["project_id"] == P}
    ok = by_path[("read_file", "package.json")]
    assert ok["decision"] == "allow" and ok["canonicalization"] == "resolved" and ok["root_digest"].startswith("sha256:")
    assert ok["mirror"] == {"roots_union": "allow", "agrees": True}
    link = by_path[("read_file", "tmp/external-link/token")]
    assert link["decision"] == "deny" and link["code"] == "path_outside_project"
    assert link["mirror"] == {"roots_union": "allow", "agrees": False}  # the old boundary would have leaked it
    assert by_path[("read_file", ".env")]["mirror"]["agrees"] is False
    assert by_path[("read_file", "../platform/secrets.env")]["mirror"]["agrees"] is True


# ---------------------------------------------------------------------------
# Approvals


async def test_request_level_access_through_a_real_tray(ws, isolated_user, sock_dir):
    answers = ("allow_once", "deny")
    trays = {answer: start_tray(sock_dir / f"{answer}.sock", "--headless", "--auto-answer", answer) for answer in answers}
    outcomes = {}

    async def session(answer: str) -> None:
        async with connect([ws["repo"]], ws["cwd"], tray_socket=sock_dir / f"{answer}.sock") as client:
            outcomes[answer] = await client.call_tool("read_file", {"project_id": P, "relative_path": "vault/notes.txt"})

    try:
        async with anyio.create_task_group() as group:
            for answer in answers:
                group.start_soon(session, answer)
    finally:
        for tray in trays.values():
            stop(tray)
    assert not outcomes["allow_once"].is_error and text(outcomes["allow_once"]) == "approval needed\n"
    assert code(outcomes["deny"]) == "approval_denied" and "approval needed" not in text(outcomes["deny"])
    lines = sorted((r for r in audit_records(isolated_user) if r["relative_path"] == "vault/notes.txt"),
                   key=lambda r: r["decision"])
    assert [(r["decision"], r["policy"], r["approval"], r["approver"]) for r in lines] == [
        ("allow", "request", "allow_once", "the Root Guard tray"),
        ("deny", "request", "deny", "the Root Guard tray"),
    ]
    assert lines[1]["code"] == "approval_denied" and lines[0]["rule"] == "vault"


async def test_request_level_access_asks_the_client_when_no_tray_runs(ws, isolated_user):
    answers = ["allow_session", "decline"]
    asked: list[str] = []

    async def elicit(ctx, params):
        asked.append(params.message)
        answer = answers.pop(0)
        if answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"answer": answer})

    async with connect([ws["repo"]], ws["cwd"], elicitation_callback=elicit) as client:
        first = await client.call_tool("read_file", {"project_id": P, "relative_path": "vault/notes.txt"})
        again = await client.call_tool("read_file", {"project_id": P, "relative_path": "vault/notes.txt"})
        write = await client.call_tool("write_file", {"project_id": P, "relative_path": "vault/new.txt", "content": "x"})
    assert text(first) == text(again) == "approval needed\n"
    assert len(asked) == 2 and "vault/notes.txt" in asked[0] and "read_file" in asked[0]
    assert code(write) == "approval_denied" and not (ws["repo"] / "vault" / "new.txt").exists()
    lines = [r for r in audit_records(isolated_user) if r["relative_path"].startswith("vault/")]
    assert [(r["decision"], r.get("approval")) for r in lines] == [
        ("allow", "allow_session"), ("allow", None), ("deny", "deny")]
    assert lines[1]["reason"].startswith("allowed for this session earlier")


# ---------------------------------------------------------------------------
# Roots: client roots narrow, a workspace change invalidates ids and grants


async def test_workspace_change_invalidates_old_ids_and_session_grants(ws, isolated_user):
    repo, billing = ws["repo"], ws["billing"]
    client_roots = [repo, ws["outside"]]  # the second is outside every --root: ignored
    answers = ["allow_session", "hang", "allow_once"]
    asked: list[str] = []
    notes: list = []

    async def list_roots(ctx):
        return types.ListRootsResult(roots=[types.Root(uri=p.as_uri()) for p in client_roots])

    async def elicit(ctx, params):
        asked.append(params.message)
        answer = answers.pop(0)
        if answer == "hang":
            await anyio.sleep_forever()
        return types.ElicitResult(action="accept", content={"answer": answer})

    async def on_message(message):
        notes.append(message)

    async def project_ids(client):
        result = await client.call_tool("list_projects", {})
        return [p["project_id"] for p in result.structured_content["projects"]]

    async def read(client, pid, rel):
        return await client.call_tool("read_file", {"project_id": pid, "relative_path": rel})

    async with connect([ws["base"]], ws["cwd"], mode="legacy", list_roots_callback=list_roots,
                       elicitation_callback=elicit, message_handler=on_message) as client:
        assert await project_ids(client) == [P]
        assert text(await read(client, P, "vault/notes.txt")) == "approval needed\n"
        assert text(await read(client, P, "vault/notes.txt")) == "approval needed\n"
        assert len(asked) == 1  # granted for this session

        client_roots[:] = [billing]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.session.send_roots_list_changed()
        assert code(await read(client, P, "package.json")) == "unknown_project"
        assert await project_ids(client) == ["billing-api"]
        listed = (await client.list_tools()).tools
        read_schema = next(t for t in listed if t.name == "read_file").input_schema
        assert read_schema["properties"]["project_id"]["enum"] == ["billing-api"]
        assert any(isinstance(n, types.ToolListChangedNotification) for n in notes)
        timed_out = await read(client, "billing-api", "vault/ledger.txt")  # nobody answers within 1 s
        assert code(timed_out) == "approval_timeout"

        client_roots[:] = [repo]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.session.send_roots_list_changed()
        assert await project_ids(client) == [P]  # the same folder keeps its id
        assert text(await read(client, P, "vault/notes.txt")) == "approval needed\n"
        assert len(asked) == 3  # the earlier session grant did not survive the change
    decisions = [(r["project_id"], r["relative_path"], r["decision"], r["code"]) for r in audit_records(isolated_user)]
    assert ("orders-api", "package.json", "deny", "unknown_project") in decisions
    assert ("billing-api", "vault/ledger.txt", "deny", "approval_timeout") in decisions


async def test_without_root_the_client_roots_are_the_baseline(ws, isolated_user):
    async def list_roots(ctx):
        return types.ListRootsResult(roots=[types.Root(uri=ws["repo"].as_uri())])

    async with connect([], ws["cwd"], list_roots_callback=list_roots) as client:
        projects = await client.call_tool("list_projects", {})
        assert [p["project_id"] for p in projects.structured_content["projects"]] == [P]
        assert text(await client.call_tool("read_file", {"project_id": P, "relative_path": "package.json"})) == \
            (ws["repo"] / "package.json").read_text()
        billing = await client.call_tool("read_file", {"project_id": "billing-api", "relative_path": "README.md"})
        assert code(billing) == "unknown_project"


def test_without_root_or_client_roots_it_refuses_to_start(ws):
    proc = subprocess.Popen([sys.executable, *SERVER], cwd=ws["cwd"], env=server_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "no-roots", "version": "1"}}}
        proc.stdin.write((json.dumps(initialize) + "\n").encode())
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], STARTUP_LIMIT)
        assert ready, "no answer to initialize"
        reply = json.loads(proc.stdout.readline())
        assert proc.wait(STARTUP_LIMIT) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdin.close()
    assert "--root" in reply["error"]["message"] and "current directory is never used" in reply["error"]["message"]
    assert b"no roots" in proc.stderr.read()


def test_relative_root_is_refused(ws):
    """Relative to what? A root never comes from the current directory."""
    done = subprocess.run([sys.executable, *SERVER, "--root", "orders-api"], cwd=ws["base"], env=server_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=STARTUP_LIMIT)
    assert done.returncode == 2
    assert "must be an absolute path" in done.stderr


# ---------------------------------------------------------------------------
# Project ids (in process: the same FileTools the server runs)


def test_project_ids_are_stable_and_never_reused_for_another_folder(tmp_path):
    from lsp_bridge.mcp.file_tools import assign_project_ids

    taken: dict[str, str] = {}
    assert assign_project_ids(["/a/api", "/b/api", "/c/web"], taken) == {"api": "/a/api", "api-2": "/b/api", "web": "/c/web"}
    assert assign_project_ids(["/b/api", "/a/api"], taken) == {"api-2": "/b/api", "api": "/a/api"}  # stable
    assert assign_project_ids(["/d/api"], taken) == {"api-3": "/d/api"}  # "api" stays bound to /a/api


def test_linked_worktrees_of_the_first_root_are_projects_too(ws):
    from lsp_bridge.mcp.file_tools import FileTools
    from tests.conftest import git

    feature = ws["base"] / "orders-api-feature"
    git(ws["repo"], "worktree", "add", "-q", str(feature), "-b", "feature")
    tools = FileTools([str(ws["repo"])])
    assert tools.list_projects()["projects"] == [
        {"project_id": P, "name": P, "origin": "root"},
        {"project_id": "orders-api-feature", "name": "orders-api-feature", "origin": "worktree"},
    ]
    plan = tools.plan("read_file", {"project_id": "orders-api-feature", "relative_path": "vault/notes.txt"})
    assert plan.verdict == "request" and plan.rule == "vault"  # the relative rule is remapped onto the worktree


async def test_a_fifo_at_a_request_level_write_target_is_asked_about_not_waited_on(ws, isolated_user):
    """The approval's preview reads the file a write replaces: a FIFO the agent made there (with
    its shell) would keep that read waiting for a writer, and the call with it."""
    os.mkfifo(ws["repo"] / "vault" / "pipe.txt")
    asked: list[str] = []

    async def elicit(ctx, params):
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async with connect([ws["repo"]], ws["cwd"], elicitation_callback=elicit) as client:
        with anyio.fail_after(30):
            write = await client.call_tool("write_file", {"project_id": P, "relative_path": "vault/pipe.txt",
                                                          "content": "x"})
    assert len(asked) == 1 and "vault/pipe.txt" in asked[0]
    assert write.is_error
