"""End-to-end: a real LSP client (pytest-lsp) against the real server process."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_bridge.cli.demo_repo import build_monorepo
from tests.conftest import git, make_repo, tmp_keeps_scans

SERVER = [sys.executable, "-m", "lsp_bridge"]


def as_data(value):
    """pygls hands custom notifications over as namedtuples; make plain data."""
    if hasattr(value, "_asdict"):
        return {k: as_data(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [as_data(v) for v in value]
    return value


async def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        found = predicate()
        if found:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def folder(path) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=from_fs_path(str(path)), name=os.path.basename(str(path)))


def capabilities(*, show_message: bool = True, progress: bool = True) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(workspace_folders=True),
        window=types.WindowClientCapabilities(
            work_done_progress=progress,
            show_message=types.ShowMessageRequestClientCapabilities() if show_message else None,
        ),
        text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=[types.CodeActionKind.QuickFix])
                )
            )
        ),
    )


class Session:
    """A started client plus the statuses it has received."""

    def __init__(self, client: LanguageClient):
        self.client = client
        self.statuses: list[dict] = []
        self.requests: list = []  # window/showMessageRequest params, in order
        self.answer = lambda params: None  # what the "person" clicks (None: dismissed)
        client.feature("rootguard/status")(lambda params: self.statuses.append(as_data(params)))
        client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)(lambda params: self._on_request(params))

    def _on_request(self, params):
        self.requests.append(params)
        return self.answer(params)

    def warnings(self) -> list[str]:
        """Warning lines the person saw: showMessage, or showMessageRequest with actions."""
        shown = [m.message for m in self.client.messages if m.type == types.MessageType.Warning]
        return shown + [r.message for r in self.requests if r.type == types.MessageType.Warning]

    def log_text(self) -> str:
        return "\n".join(m.message for m in self.client.log_messages)

    async def start(self, folders, **caps) -> None:
        await self.client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(**caps),
                workspace_folders=[folder(f) for f in folders] if folders is not None else None,
                client_info=types.ClientInfo(name="pytest-lsp"),
            )
        )

    async def next_status(self, after: int, predicate=lambda s: True, what="status") -> dict:
        return await wait_for(
            lambda: next((s for s in self.statuses[after:] if predicate(s)), None), what=what
        )

    def change_folders(self, added=(), removed=()) -> int:
        mark = len(self.statuses)
        self.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[folder(f) for f in added], removed=[folder(f) for f in removed]
                )
            )
        )
        return mark


@pytest.fixture(scope="module")
def monorepo(tmp_path_factory):
    from tests.conftest import GIT_ENV

    os.environ.update(GIT_ENV)
    return build_monorepo(str(tmp_path_factory.mktemp("demo")))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def raw_client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def client(raw_client) -> Session:
    return Session(raw_client)


async def test_no_folder_means_no_root(client):
    await client.start(None)
    status = await client.next_status(0)
    assert status["roots"] == [] and status["union"] == []
    assert status["widened"] is False


async def test_widening_warning_prices_the_new_root(client, monorepo):
    await client.start([monorepo.narrow])
    first = await client.next_status(0)
    assert first["roots"] == [monorepo.narrow]
    assert first["widened"] is False
    assert monorepo.narrow in first["union"]

    mark = client.change_folders(added=[monorepo.repo])
    widened = await client.next_status(mark, lambda s: s["widened"], "widened status")
    assert widened["inventory_pending"] is True  # sent before the inventory finished
    assert widened["widening"][0]["kind"] == "ancestor"
    assert widened["widening"][0]["folder"] == monorepo.repo

    done = await client.next_status(mark, lambda s: s["inventory"], "inventory status")
    inventory = done["inventory"]
    assert inventory["files_before"] >= 340 and inventory["files_after"] > 5 * inventory["files_before"]
    creds = {os.path.relpath(c["path"], monorepo.repo): c["count"] for c in inventory["credentials"]}
    assert creds[".env"] == 4
    repo_git = next(g for g in inventory["git"] if g["path"].startswith(monorepo.repo))
    assert repo_git["commits"] == monorepo.commits
    assert any(".env" in name for name in repo_git["deleted_sensitive"])
    assert any(p.endswith("packages/payments") for p in inventory["siblings"])
    assert any(monorepo.deploy_role in r["roles"] for r in inventory["ci_roles"])
    assert done["summary"].startswith("⚠ union ×")

    line = (await wait_for(client.warnings, what="widening warning"))[0]
    assert "\n" not in line  # one line a person reads whole, in any client
    assert line.startswith("Root Guard: adding shop") and "widened the agent's boundary ×" in line
    assert "secrets files" in line and f".git ({monorepo.commits} commits)" in line
    # the full report goes to the log, right after the line
    report = await wait_for(lambda: monorepo.repo in client.log_text() and client.log_text(), what="the report in the log")
    assert monorepo.repo in report and monorepo.narrow in report
    assert "(4)" in report  # the .env credential count
    for secret in monorepo.fake_secrets:
        assert secret not in report and secret not in line
        assert secret not in str(done)


async def test_disjoint_folder_is_a_smaller_widening_and_narrowing_is_quiet(client, monorepo, tmp_path):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.md").write_text("x\n")
    await client.start([monorepo.narrow])
    await client.next_status(0)

    mark = client.change_folders(added=[other])
    status = await client.next_status(mark, lambda s: s["widened"])
    assert status["widening"][0]["kind"] == "disjoint"
    line = (await wait_for(client.warnings, what="widening warning"))[0]
    assert line.startswith("Root Guard: adding notes widened")
    await wait_for(lambda: "disjoint" in client.log_text(), what="the report in the log")

    warnings_so_far = len(client.warnings())
    mark = client.change_folders(removed=[other])
    narrowed = await client.next_status(mark, lambda s: str(other) not in s["union"], "narrowed status")
    assert narrowed["widened"] is False
    # A request answered after the narrowing: the server has written all it had to say about it.
    await client.client.protocol.send_request_async("rootguard/inventory", {})
    assert len(client.warnings()) == warnings_so_far  # no warning on narrowing


async def test_git_worktree_add_while_running_updates_the_status(client, tmp_path):
    repo = make_repo(tmp_path / "app", {"src/main.py": "print()\n"})
    await client.start([repo])
    first = await client.next_status(0)
    assert first["worktrees"] == []
    mark = len(client.statuses)
    git(repo, "worktree", "add", "-q", str(tmp_path / "app-feature"), "-b", "feature")
    status = await client.next_status(mark, lambda s: s["worktrees"], "worktree status")
    assert status["worktrees"][0]["checkout"] == str(tmp_path / "app-feature")
    assert str(tmp_path / "app-feature") in status["union"]


async def test_broken_config_keeps_decisions_and_shows_a_diagnostic(client, tmp_path):
    repo = make_repo(tmp_path / "svc", {"docs/a.md": "a\n"})
    config = repo / ".rootguard.toml"
    config.write_text('version = 2\n[[paths]]\nid = "docs-ro"\npath = "docs"\npolicies = { write = "deny" }\n')
    await client.start([repo])
    await client.next_status(0)
    explain = await client.client.protocol.send_request_async(
        "rootguard/explain", {"path": str(repo / "docs/a.md"), "op": "write"}
    )
    assert as_data(explain)["decisions"][0]["decision"] == "deny"

    config.write_text('version = 2\n[[paths]\nid = "docs-ro"\n')  # a typo: invalid TOML
    uri = from_fs_path(str(config))
    diags = await wait_for(lambda: client.client.diagnostics.get(uri), what="config diagnostic")
    assert diags[0].severity == types.DiagnosticSeverity.Error
    explain = await client.client.protocol.send_request_async(
        "rootguard/explain", {"path": str(repo / "docs/a.md"), "op": "write"}
    )
    decision = as_data(explain)["decisions"][0]
    assert (decision["decision"], decision["rule"]) == ("deny", "docs-ro")  # the last good config


async def test_migrate_code_action_applies_the_migration(client, tmp_path):
    repo = make_repo(tmp_path / "legacy")
    config = repo / ".rootguard.toml"
    text = "# keep this comment\n[safety]\nallow_temp_directory = false\nfollow_symlinks = true\n"
    config.write_text(text)
    await client.start([repo])
    uri = from_fs_path(str(config))
    client.client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="toml", version=1, text=text))
    )
    diags = await wait_for(lambda: client.client.diagnostics.get(uri), what="deprecation diagnostic")
    deprecated = [d for d in diags if d.code == "deprecated-v1-boolean"]
    assert deprecated and types.DiagnosticTag.Deprecated in deprecated[0].tags
    actions = await client.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=deprecated[0].range,
            context=types.CodeActionContext(diagnostics=deprecated),
        )
    )
    action = next(a for a in actions if a.title == "Migrate to version 2")
    new_text = action.edit.changes[uri][0].new_text
    from lsp_bridge.core.migrate import migrate_text

    assert new_text == migrate_text(text, str(config)).new_text
    assert "# keep this comment" in new_text and "version = 2" in new_text


async def test_explain_reports_rule_and_reason(client, tmp_path):
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    await client.start([repo])
    await client.next_status(0)
    result = as_data(await client.client.protocol.send_request_async("rootguard/explain", {"path": str(repo / "a.txt")}))
    assert [d["op"] for d in result["decisions"]] == ["read", "write", "delete"]
    assert all(d["decision"] == "allow" for d in result["decisions"])
    outside = as_data(await client.client.protocol.send_request_async("rootguard/explain", {"path": str(tmp_path), "op": "read"}))
    assert outside["decisions"][0]["decision"] == "deny"


# --- approvals without a tray (issue 4) ---------------------------------------------


def request_repo(tmp_path):
    repo = make_repo(tmp_path / "svc", {"docs/a.md": "a\n", "src/b.py": "b\n"})
    (repo / ".rootguard.toml").write_text(
        'version = 2\n[approvals]\ntimeout_seconds = 5\n'
        '[[paths]]\nid = "ask-docs"\npath = "docs"\npolicies = { read = "request", write = "request" }\n'
    )
    return repo


async def access(client, path, op="read"):
    result = await client.client.protocol.send_request_async(
        "rootguard/access", {"path": str(path), "op": op, "tool": "read_file"}
    )
    return as_data(result)


@pytest.mark.parametrize(
    "answer, expected", [("Allow once", "allow"), ("Deny", "deny"), (None, "deny")]
)
async def test_no_tray_asks_in_the_editor(client, tmp_path, answer, expected):
    repo = request_repo(tmp_path)
    prompts = client.requests
    client.answer = lambda params: types.MessageActionItem(title=answer) if answer else None
    await client.start([repo])
    await client.next_status(0)
    result = await access(client, repo / "docs/a.md")
    assert result["decision"] == expected
    assert result["rule"] == "ask-docs"
    prompt = prompts[0]
    assert [a.title for a in prompt.actions] == ["Allow once", "Allow for this session", "Deny"]
    assert str(repo / "docs/a.md") in prompt.message and "read_file" in prompt.message
    assert (await access(client, repo / "src/b.py"))["decision"] == "allow"  # no prompt for allowed paths
    assert len(prompts) == 1


async def test_allow_for_this_session_lasts_until_the_folders_change(client, tmp_path):
    repo = request_repo(tmp_path)
    other = make_repo(tmp_path / "other")
    prompts = client.requests
    client.answer = lambda params: types.MessageActionItem(title="Allow for this session")
    await client.start([repo])
    await client.next_status(0)
    assert (await access(client, repo / "docs/a.md"))["decision"] == "allow"
    assert (await access(client, repo / "docs/a.md"))["decision"] == "allow"
    assert len(prompts) == 1
    mark = client.change_folders(added=[other])
    await client.next_status(mark, lambda s: str(other) in s["roots"], "status with the new folder")
    assert (await access(client, repo / "docs/a.md"))["decision"] == "allow"
    access_prompts = [r for r in prompts if "read_file" in r.message]
    assert len(access_prompts) == 2  # the grant was dropped with the workspace change


async def test_no_tray_and_no_prompt_support_denies_saying_why(client, tmp_path):
    repo = request_repo(tmp_path)
    await client.start([repo], show_message=False)
    await client.next_status(0)
    result = await access(client, repo / "docs/a.md")
    assert result["decision"] == "deny"
    assert "no approver is running" in result["reason"]


# --- live roots details -------------------------------------------------------------


async def test_root_uri_is_used_only_when_no_folders_are_sent(client, tmp_path):
    repo = make_repo(tmp_path / "solo")
    await client.client.initialize_session(
        types.InitializeParams(capabilities=capabilities(), root_uri=from_fs_path(str(repo)), workspace_folders=None)
    )
    status = await client.next_status(0)
    assert status["roots"] == [str(repo)]


async def test_inventory_streams_progress_and_follows_new_files(client, monorepo):
    await client.start([monorepo.narrow])
    await client.next_status(0)
    mark = client.change_folders(added=[monorepo.repo])
    first = await client.next_status(mark, lambda s: s["inventory"], "inventory")
    assert client.client.progress_reports, "work-done progress was not reported"
    kinds = [p.kind for reports in client.client.progress_reports.values() for p in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end"

    new_env = Path(monorepo.repo) / ".env.local"
    new_env.write_text("STRIPE_SECRET_KEY=sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "\n")
    try:
        mark = len(client.statuses)
        updated = await client.next_status(
            mark,
            lambda s: s["inventory"] and any(c["path"] == str(new_env) for c in s["inventory"]["credentials"]),
            "inventory with the new .env.local",
        )
        assert len(updated["inventory"]["credentials"]) == len(first["inventory"]["credentials"]) + 1
    finally:
        new_env.unlink()


async def test_a_credential_file_three_levels_deep_updates_the_inventory(client, monorepo):
    """Below the inotify watches (the root and one level), the deep rescan sees a new .env within a second."""
    await client.start([monorepo.narrow])
    await client.next_status(0)
    mark = client.change_folders(added=[monorepo.repo])
    first = await client.next_status(mark, lambda s: s["inventory"], "inventory")
    existing = next(p for p in sorted(Path(monorepo.repo, "packages").iterdir()) if p.is_dir())
    deep = existing / "deep-a" / "deep-b"
    deep.mkdir(parents=True)
    (existing / "src").mkdir(exist_ok=True)
    nested = existing / "src" / ".env"  # an existing directory, three levels below the root
    created = [deep / ".env", nested]
    try:
        for path in created:
            mark = len(client.statuses)
            path.write_text("STRIPE_SECRET_KEY=sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "\n")
            started = asyncio.get_running_loop().time()
            await client.next_status(
                mark,
                lambda s, path=path: s["inventory"] and any(c["path"] == str(path) for c in s["inventory"]["credentials"]),
                f"inventory with {path}",
            )
            # Within a second on an idle machine; the bound here leaves room for a loaded CI runner.
            assert asyncio.get_running_loop().time() - started < 10
        last = client.statuses[-1]
        assert len(last["inventory"]["credentials"]) == len(first["inventory"]["credentials"]) + 2
        assert last.get("watch_limit") is None
    finally:
        for path in created:
            path.unlink(missing_ok=True)
        deep.rmdir()
        deep.parent.rmdir()


async def test_project_allow_beyond_the_folders_is_reported_as_reduced(client, tmp_path):
    repo = make_repo(tmp_path / "mono", {"packages/app/index.ts": "x\n", "shared/tsconfig.json": "{}\n"})
    config = repo / "packages/app/.rootguard.toml"
    config.write_text('version = 2\n[[paths]]\nid = "shared"\npath = "../../shared"\npolicies = { read = "allow" }\n')
    await client.start([repo / "packages/app"])
    uri = from_fs_path(str(config))
    diags = await wait_for(lambda: client.client.diagnostics.get(uri), what="reduced-allow hint")
    hint = next(d for d in diags if d.code == "project-allow-reduced")
    assert hint.severity == types.DiagnosticSeverity.Information
    assert hint.range.start.line == 2  # the rule's id line


# --- start-up -----------------------------------------------------------------------


def raw_messages(params: dict, *requests: dict) -> list[dict]:
    """Talk to the server over raw stdio: initialize with ``params``, then ``requests``, then shutdown."""
    import json
    import subprocess

    def frame(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def read(stream) -> dict:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None, "the server closed stdout"
        return json.loads(stream.read(length))

    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    answers = []
    try:
        for message in ({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": params}, *requests,
                        {"jsonrpc": "2.0", "id": 99, "method": "shutdown"}):
            proc.stdin.write(frame(message))
            proc.stdin.flush()
            if "id" in message:
                while "id" not in (answer := read(proc.stdout)) or answer["id"] != message["id"]:
                    pass  # notifications
                answers.append(answer)
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        proc.wait(10)
    finally:
        proc.kill()
    return answers


@pytest.mark.parametrize("say_shutdown", [True, False], ids=["shutdown-then-exit", "exit-alone"])
def test_closing_the_window_while_the_inventory_runs_writes_no_error(monorepo, say_shutdown):
    """A window closed right after it opened wide: the status the warm-up still had to send found
    stdout closed, and pygls reported that failure by writing again, ~190 times nested (193,000 lines
    of tracebacks in the editor's output for one clean exit)."""
    import json
    import subprocess

    def frame(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    params = {"processId": None, "rootUri": None, "capabilities": {},
              "workspaceFolders": [{"uri": from_fs_path(p), "name": p} for p in (monorepo.narrow, monorepo.repo)]}
    closing = [{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}] if say_shutdown else []
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}}, *closing,
                {"jsonrpc": "2.0", "method": "exit"}]
    proc = subprocess.run(SERVER, input=b"".join(frame(m) for m in messages), capture_output=True, timeout=60)
    assert proc.stderr.decode() == ""
    assert proc.returncode == 0
    assert b'"method": "rootguard/status"' in proc.stdout  # it had started: the first status went out


@pytest.mark.parametrize(
    "client_caps, encoding",
    [({}, "utf-16"), ({"general": {"positionEncodings": ["utf-8", "utf-16"]}}, "utf-8"),
     ({"general": {"positionEncodings": ["utf-32"]}}, "utf-32")],
)
def test_initialize_is_answered_by_pygls_with_our_capabilities(client_caps, encoding):
    params = {"processId": None, "capabilities": client_caps, "workspaceFolders": None}
    answer, shutdown = raw_messages(params)
    result = answer["result"]
    assert result["serverInfo"]["name"] == "rootguard"
    assert result["capabilities"]["positionEncoding"] == encoding
    assert result["capabilities"]["executeCommandProvider"]["commands"] == [
        "rootguard.acknowledge", "rootguard.withdrawAcknowledgement", "rootguard.migrateConfig"]
    assert result["capabilities"]["workspace"]["workspaceFolders"] == {"supported": True, "changeNotifications": True}
    assert shutdown == {"jsonrpc": "2.0", "id": 99, "result": None}


# --- approvals through a real tray (issue 4) ------------------------------------------


@pytest.fixture
def tray_socket(tmp_path, monkeypatch):
    """A real tray (headless broker, automated answers) on a private socket."""
    from tests.trayproc import start_tray, stop

    sock_dir = tmp_path / "run"
    sock_dir.mkdir(mode=0o700)
    sock = sock_dir / "tray.sock"
    monkeypatch.setenv("ROOTGUARD_TRAY_SOCKET", str(sock))
    proc = start_tray(sock, "--headless", "--auto-answer", "allow_once")
    yield sock
    stop(proc)


async def test_a_running_tray_answers_instead_of_the_editor(tray_socket, client, tmp_path):
    repo = request_repo(tmp_path)
    prompts = client.requests
    await client.start([repo])
    await client.next_status(0, lambda s: s["approver"] == "tray", "the tray connection")
    result = await access(client, repo / "docs/a.md")
    assert result["decision"] == "allow" and "Allow once" in result["reason"]
    assert prompts == []  # the editor was not asked


async def test_a_user_config_created_later_is_picked_up(client, tmp_path, isolated_user):
    repo = make_repo(tmp_path / "late", {"docs/a.md": "a\n"})
    assert not (isolated_user / ".config" / "rootguard").exists()
    await client.start([repo])
    await client.next_status(0)
    user_dir = isolated_user / ".config" / "rootguard"
    user_dir.mkdir(parents=True)
    # No wait: the server watches the new directory, then reads it again, so a file
    # written before its watch began is still seen.
    (user_dir / "config.toml").write_text(
        f'version = 2\n[[paths]]\nid = "no-docs"\npath = "{repo}/docs"\npolicies = {{ read = "deny" }}\n'
    )

    async def decision():
        result = await client.client.protocol.send_request_async(
            "rootguard/explain", {"path": str(repo / "docs/a.md"), "op": "read"}
        )
        return as_data(result)["decisions"][0]

    for _ in range(100):
        if (await decision())["rule"] == "no-docs":
            break
        await asyncio.sleep(0.1)
    assert (await decision())["decision"] == "deny"


# --- widening relative to what the person accepted (issue 14) ------------------------


class Window:
    """One editor window: its own server process, started and stopped by the test."""

    def __init__(self):
        from pytest_lsp import make_test_lsp_client

        self.raw = make_test_lsp_client()
        self.session = Session(self.raw)

    async def __aenter__(self) -> Session:
        await self.raw.start_io(*SERVER)
        return self.session

    async def __aexit__(self, *exc) -> None:
        await self.raw.shutdown_session()
        await self.raw.stop()


async def settled(session: Session, what: str = "settled status") -> dict:
    """The status once the widening (if any) has been measured."""
    return await session.next_status(0, lambda s: not s["inventory_pending"] and s["mounts"] is not None, what)


async def test_a_window_started_wide_warns_like_a_live_change(monorepo):
    """VS Code's reload into an untitled workspace after Add Folder: a fresh server with both folders."""
    async with Window() as narrow_window:
        await narrow_window.start([monorepo.narrow])
        await settled(narrow_window)
        assert narrow_window.warnings() == []  # a folder opened alone is what the person chose
    async with Window() as wide:
        await wide.start([monorepo.narrow, monorepo.repo])
        status = await wide.next_status(0, lambda s: s["inventory"], "measured status")
        assert status["widened"] is True and status["acknowledged"] is False
        assert status["widening"][0]["folder"] == monorepo.repo
        assert monorepo.narrow in status["widening"][0]["contains"]
        assert status["summary"].startswith("⚠ union ×")
        line = (await wait_for(wide.warnings, what="start-up widening warning"))[0]
        # the package was opened alone before, shop is new: the person added it (VS Code's reload after Add Folder)
        assert line.startswith("Root Guard: adding shop") and "widened the agent's boundary ×" in line
        assert "\n" not in line
        request = wide.requests[0]
        assert [a.title for a in request.actions] == ["Show report", "Acknowledge"]
        await wait_for(lambda: monorepo.repo in wide.log_text(), what="the report in the log")


async def test_a_runtime_directory_that_cannot_be_trusted_is_a_status_warning_and_the_window_works_on(monorepo):
    """The window cannot be published (the rootguard runtime directory is a symlink): the status says so, and the
    rest of the start-up (the widening warning) still happens; before, the handler died on ``RuntimeDirError``."""
    from lsp_bridge.agents.windows import sessions_dir

    runtime = Path(sessions_dir()).parent
    elsewhere = runtime.with_name("rootguard-elsewhere")
    elsewhere.mkdir(mode=0o700, parents=True)
    runtime.symlink_to(elsewhere)
    async with Window() as wide:
        await wide.start([monorepo.narrow, monorepo.repo])
        status = await wide.next_status(0, what="first status")
        shown = [w for w in status["warnings"] if w["code"] == "window-unpublished"]
        assert shown and str(runtime) in shown[0]["message"] and "agents' hooks" in shown[0]["message"]
        line = (await wait_for(wide.warnings, what="start-up widening warning"))[0]
        assert "widened the agent's boundary" in line
    assert not list(elsewhere.rglob("*.json"))  # nothing published through the link


async def test_an_acknowledged_union_started_again_is_quiet_and_a_narrower_one_too(monorepo):
    async with Window() as first:
        first.answer = lambda params: (
            types.MessageActionItem(title="Acknowledge") if params.actions[-1].title == "Acknowledge" else None
        )
        await first.start([monorepo.narrow, monorepo.repo])
        acked = await first.next_status(0, lambda s: s["acknowledged"] and s["union"], "acknowledged status")
        assert monorepo.repo in acked["reference"]
        assert not acked["summary"].startswith("⚠ union")
        # A folder inside another folder stays visible, acknowledged or not.
        assert acked["widened"] is True and acked["widening"][0]["contains"] == [monorepo.narrow]
    async with Window() as again:
        await again.start([monorepo.narrow, monorepo.repo])
        status = await settled(again)
        await asyncio.sleep(0.5)
        assert status["acknowledged"] is True
        assert again.warnings() == []
    async with Window() as narrower:
        await narrower.start([monorepo.narrow])
        status = await settled(narrower)
        await asyncio.sleep(0.5)
        assert status["widened"] is False
        assert narrower.warnings() == []


async def test_several_new_folders_at_start_warn_and_the_command_acknowledges(tmp_path):
    a, b = make_repo(tmp_path / "alpha"), make_repo(tmp_path / "beta")
    async with Window() as window:
        await window.start([a, b], show_message=False)  # a client without showMessageRequest
        line = (await wait_for(window.warnings, what="warning"))[0]
        assert line.startswith("Root Guard: opening alpha and beta widened")
        assert window.requests == []
        mark = len(window.statuses)
        result = await window.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="rootguard.acknowledge", arguments=[])
        )
        assert as_data(result)["acknowledged"] is True
        status = await window.next_status(mark, lambda s: s["acknowledged"], "acknowledged status")
        assert status["widened"] is False and status["summary"] == "2 roots"
        report = as_data(await window.client.protocol.send_request_async("rootguard/explain", {}))
        assert report["acknowledged"] is True


async def test_status_warns_about_an_mcp_server_that_runs_unconfined(client, tmp_path):
    project = tmp_path / "app"
    (project / ".vscode").mkdir(parents=True)
    (project / ".vscode" / "mcp.json").write_text(
        '{\n  // one plain, one confined\n  "servers": {\n'
        '    "files": {"command": "npx", "args": ["-y", "@acme/fs-server"]},\n'
        '    "index": {"command": "rootguard", "args": ["run", "--root", "${workspaceFolder}", "--", "idx"]}\n'
        "  }\n}\n"
    )
    await client.start([project])

    def unconfined(status):
        return [w for w in status.get("warnings", []) if w.get("code") == "mcp-server-unconfined"]

    status = await client.next_status(0, lambda s: unconfined(s), "a status with the unconfined-server warning")
    [warning] = unconfined(status)
    assert "servers.files" in warning["message"] and "rootguard run" in warning["message"]
    assert not any(w.get("code") == "mcp-server-confined-wider" for w in status["warnings"])


# --- rootguard/trace (issue 13) -------------------------------------------------------


@pytest.mark.skipif(not (shutil.which("strace") and shutil.which("bwrap")), reason="strace and bubblewrap are needed")
async def test_trace_request_proposes_the_file_above_the_root(client, tmp_path):
    repo = make_repo(tmp_path / "mono", {"tsconfig.base.json": '{"compilerOptions": {}}\n',
                                         "packages/app/index.txt": "app\n"})
    root = repo / "packages" / "app"
    await client.start([root])
    await client.next_status(0)
    result = as_data(await client.client.protocol.send_request_async(
        "rootguard/trace", {"command": ["cat", "../../tsconfig.base.json"]}))
    assert result["exit_code"] == 0 and "compilerOptions" in result["output"]
    assert [r["path"] for r in result["proposed"]["paths"]] == [str(repo / "tsconfig.base.json")]
    assert '[[paths]]' in result["snippet"]
    bad = as_data(await client.client.protocol.send_request_async("rootguard/trace", {"command": []}))
    assert bad["exit"] == 2 and "command" in bad["error"]


# --- scans kept between sessions (scan_store) ------------------------------------------


@pytest.mark.skipif(not tmp_keeps_scans(), reason="the temporary directory is not on a local file system: "
                                                  "nothing is kept there")
async def test_a_second_session_counts_from_the_kept_scans_and_sees_what_changed_between(tmp_path):
    from tests.conftest import GIT_ENV

    os.environ.update(GIT_ENV)
    demo = build_monorepo(str(tmp_path / "demo"), packages=4, files_per_package=6, narrow_files=10,
                          commits=4, worktree=False)
    await asyncio.sleep(0.2)  # past the racy window: the first session's listings are kept
    scans = Path(os.environ["XDG_CACHE_HOME"], "rootguard", "scans")
    async with Window() as first:
        await first.start([demo.narrow])
        await first.next_status(0)
        mark = first.change_folders(added=[demo.repo])
        before = (await first.next_status(mark, lambda s: s["inventory"], "inventory"))["inventory"]
        await wait_for(lambda: list(scans.glob("*.json")), what="the scans kept after the warning")
    deep = Path(demo.package("ui"), "src", "a", "b")
    deep.mkdir(parents=True)
    (deep / ".env").write_text("STRIPE_SECRET_KEY=sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "\n")
    async with Window() as second:
        await second.start([demo.narrow])
        await second.next_status(0)
        mark = second.change_folders(added=[demo.repo])
        after = (await second.next_status(mark, lambda s: s["inventory"], "inventory"))["inventory"]
    assert after["files_after"] == before["files_after"] + 1
    assert str(deep / ".env") in [c["path"] for c in after["credentials"]]
    assert len(after["credentials"]) == len(before["credentials"]) + 1
