"""Every button keeps its promise (issue 33) through the real language server (pytest-lsp):
the words name what the person did and attribute what each folder brought, one root count,
one reference for the numbers, the report shown once and whole, Acknowledge and Withdraw
acknowledgement, Migrate Config with its URI, a broken configuration named as the cause,
and suggestions made for the narrow roots."""

from __future__ import annotations

import asyncio
import os

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_bridge.cli.demo_repo import build_monorepo
from tests.conftest import GIT_ENV, make_repo
from tests.test_lsp import Window, as_data, settled, wait_for


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    os.environ.update(GIT_ENV)
    return build_monorepo(str(tmp_path_factory.mktemp("demo")))



async def measured(window, after: int = 0) -> dict:
    return await window.next_status(after, lambda s: s["inventory"] and not s["inventory_pending"], "measured status")


async def test_adding_the_repository_root_says_adding_and_the_numbers_match_a_reopened_window(demo):
    async with Window() as narrow:  # the package opened alone: accepted as it is
        await narrow.start([demo.narrow])
        await settled(narrow)
    async with Window() as reloaded:  # VS Code's reload after Add Folder: a fresh server with both
        await reloaded.start([demo.narrow, demo.repo])
        started = await measured(reloaded)
        line = (await wait_for(reloaded.warnings, what="start-up warning"))[0]
        print("ADD FOLDER NOTIFICATION:", line)
        explained = as_data(await reloaded.client.protocol.send_request_async("rootguard/explain", {}))
        print("ADD FOLDER REPORT:\n" + explained["report"])
        assert line.startswith("Root Guard: adding shop widened the agent's boundary ×"), line  # the person added shop
    async with Window() as reopened:
        await reopened.start([demo.narrow, demo.repo])
        again = await measured(reopened)
        line = (await wait_for(reopened.warnings, what="reopened warning"))[0]
        print("REOPENED NOTIFICATION:", line)
        explained = as_data(await reopened.client.protocol.send_request_async("rootguard/explain", {}))
        print("REOPENED REPORT:\n" + explained["report"])
        assert line.startswith("Root Guard: reopening shop widened the agent's boundary ×"), line
    async with Window() as live_window:  # Neovim's add_workspace_folder: a live change
        await live_window.start([demo.narrow])
        await settled(live_window)
        mark = live_window.change_folders(added=[demo.repo])
        live = await measured(live_window, mark)
        line = (await wait_for(live_window.warnings, what="live warning"))[0]
        assert line.startswith("Root Guard: adding shop widened the agent's boundary ×"), line
    for status in (started, again):  # one reference: the same numbers live, reloaded and reopened
        for key in ("files_before", "files_after", "ratio", "siblings"):
            assert status["inventory"][key] == live["inventory"][key], key
        assert status["summary"] == live["summary"]
    git = live["inventory"]["git"][0]
    assert git["size"].endswith("MB") and git["size"] in "\n".join(live["widening_lines"])


async def test_a_disjoint_folder_after_an_unacknowledged_widening_is_attributed(demo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("one file\n")
    async with Window() as window:
        await window.start([demo.narrow])
        await settled(window)
        mark = window.change_folders(added=[demo.repo])
        await measured(window, mark)
        await wait_for(window.warnings, what="first warning")
        mark = window.change_folders(added=[outside])
        await window.next_status(mark, lambda s: s["inventory"] and str(outside) in s["inventory"]["after"], "second")
        lines = await wait_for(lambda: [w for w in window.warnings() if "outside" in w], what="second warning")
        print("DISJOINT NOTIFICATION:", lines[0])
        print("DISJOINT REPORT:\n" + as_data(await window.client.protocol.send_request_async("rootguard/explain", {}))["report"])
        assert lines[0].startswith("Root Guard: adding outside widened the agent's boundary: +1 file;"), lines[0]
        head, earlier = lines[0].split("; not yet acknowledged: ", 1)
        assert "secrets" not in head and ".git" not in head  # the credentials and .git came with shop
        assert earlier.startswith("shop (+") and "secrets file" in earlier and ".git" in earlier


async def test_show_report_once_whole_and_withdraw_brings_the_warning_back(demo):
    """A client without showDocument (Neovim 0.7) gets the whole report as one request with
    its actions; a client with its own report view gets nothing from the server."""
    async with Window() as window:
        answers = iter(["Show report", "Acknowledge"])
        window.answer = lambda params: types.MessageActionItem(title=next(answers, "Close"))
        await window.start([demo.narrow, demo.repo])
        status = await window.next_status(0, lambda s: s["acknowledged"] and s["union"], "acknowledged from the report")
        report = window.requests[1]
        assert report.type == types.MessageType.Info and "\n" in report.message
        assert report.message.startswith("Root Guard: opening") and "Acknowledged union" in report.message
        assert [a.title for a in report.actions] == ["Acknowledge", "Close"]
        assert status["withdrawable"] is True
        mark = len(window.statuses)
        result = as_data(await window.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="rootguard.withdrawAcknowledgement", arguments=[])))
        assert result["withdrawn"] is True
        again = await window.next_status(mark, lambda s: not s["acknowledged"], "withdrawn status")
        assert again["widened"] is True and again["withdrawable"] is False
    async with Window() as vscode_like:
        await vscode_like.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(
                show_message=types.ShowMessageRequestClientCapabilities(),
                show_document=types.ShowDocumentClientCapabilities(support=True))),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(p), name=p) for p in (demo.narrow, demo.repo)],
            initialization_options={"reportView": True}))
        vscode_like.answer = lambda params: types.MessageActionItem(title="Show report")
        await wait_for(lambda: vscode_like.requests, what="the widening request")
        await asyncio.sleep(1.0)
        assert len(vscode_like.requests) == 1  # no second request, and no document either
        assert not any("widening-" in str(m) for m in vscode_like.client.log_messages if "showDocument" in str(m))


async def test_migrate_config_reads_the_uri_argument(tmp_path):
    repo = make_repo(tmp_path / "legacy")
    config = repo / ".rootguard.toml"
    config.write_text("[safety]\nfollow_symlinks = true\n")
    async with Window() as window:
        edits = []
        window.client.feature(types.WORKSPACE_APPLY_EDIT)(
            lambda params: (edits.append(params), types.ApplyWorkspaceEditResult(applied=True))[1])
        await window.start([repo])
        await settled(window)
        result = as_data(await window.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="rootguard.migrateConfig", arguments=[from_fs_path(str(config))])))
        assert result == {"applied": True}
        new_text = edits[0].edit.changes[from_fs_path(str(config))][0].new_text
        assert "version = 2" in new_text
        bad = as_data(await window.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="rootguard.migrateConfig", arguments=["untitled:x"])))
        assert bad["applied"] is False and "untitled:x" in bad["reason"]


async def test_a_broken_configuration_at_start_is_named_as_the_cause(tmp_path):
    repo = make_repo(tmp_path / "svc")
    (repo / ".rootguard.toml").write_text("version = 2\n[[paths]\n")
    async with Window() as window:
        await window.start([repo])
        status = await window.next_status(0, lambda s: s["union"] is not None, "first status")
        assert "every access is denied" in status["summary"] and ".rootguard.toml:2" in status["summary"]
        assert "no root" not in status["summary"]


async def test_the_root_count_is_the_unions_entries_everywhere(demo):
    async with Window() as window:
        await window.start([demo.narrow])
        status = await settled(window)
        assert len(status["union"]) == 2  # the package and its copy in the linked worktree
        assert status["summary"] == "2 roots (1 folder)"


async def test_suggestions_are_made_for_the_narrow_roots_never_the_widened_union(demo):
    async with Window() as window:
        await window.start([demo.narrow, demo.repo])
        status = await window.next_status(0, lambda s: s["mounts"] and s["inventory"], "mounts")
        mounts = status["mounts"]
        assert demo.repo not in mounts["suggested_for"] and demo.narrow in mounts["suggested_for"]
        assert not any(s["source"] == demo.repo for s in mounts["suggested"])
        assert f"{demo.repo}:" not in " ".join(mounts["docker_args"])
        for s in mounts["suggested"]:
            inside = any(s["source"] == r or s["source"].startswith(r + "/") for r in mounts["suggested_for"])
            assert s["beyond_acknowledged"] is (not inside)
