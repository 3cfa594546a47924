"""``FileTools`` directly: real files in temporary directories, the real policy engine, no MCP.

Each test builds its projects on disk, plans a call, and concludes it the way the
MCP front end does (with an approval answer where the plan asks for one). What is
asserted is what the agent would see (verdicts, error codes, file contents) and
what the audit log records.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_bridge.approvals.service import SessionGrants
from lsp_bridge.mcp.audit import AuditLog, read_records
from lsp_bridge.mcp.file_tools import FileTools, ToolError
from tests.conftest import make_repo


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project_rules(root: Path, rules: str) -> None:
    write(root / ".rootguard.toml", "version = 2\n" + rules)


@pytest.fixture
def shop(tmp_path) -> Path:
    repo = make_repo(tmp_path / "shop", {
        "README.md": "shop\n",
        "src/app.ts": "export const a = 1;\n",
        "vault/notes.txt": "approval needed\n",
        "secrets/key.pem": "KEY\n",
    })
    project_rules(repo, (
        '[[paths]]\nid = "vault"\npath = "vault"\npolicies = { read = "request", write = "request" }\n'
        '[[paths]]\nid = "no-secrets"\npath = "secrets"\npolicies = { read = "deny", write = "deny" }\n'
    ))
    return repo


def tools_for(*roots: Path, audit: AuditLog | None = None, grants: SessionGrants | None = None) -> FileTools:
    return FileTools([str(r) for r in roots], env=dict(os.environ), audit=audit, grants=grants)


def run(tools: FileTools, tool: str, approval: str | None = None, **args) -> dict:
    plan = tools.plan(tool, args)
    return tools.conclude(plan, approval, "a test approver" if approval else None)


def refused(tools: FileTools, tool: str, approval: str | None = None, **args) -> ToolError:
    with pytest.raises(ToolError) as caught:
        run(tools, tool, approval, **args)
    return caught.value


# --- one target ---------------------------------------------------------------------


def test_an_allowed_read_returns_the_file(shop):
    tools = tools_for(shop)
    plan = tools.plan("read_file", {"project_id": "shop", "relative_path": "src/app.ts"})
    assert (plan.verdict, plan.code) == ("allow", None)
    assert "host baseline" in plan.reason
    result = tools.conclude(plan)
    assert result["text"] == "export const a = 1;\n" and result["correlation_id"] == plan.correlation_id


def test_a_denied_target_is_refused_with_the_rule_and_nothing_is_read(shop):
    tools = tools_for(shop)
    plan = tools.plan("read_file", {"project_id": "shop", "relative_path": "secrets/key.pem"})
    assert (plan.verdict, plan.code, plan.rule) == ("deny", "policy_denied", "no-secrets")
    error = refused(tools, "read_file", project_id="shop", relative_path="secrets/key.pem")
    assert error.code == "policy_denied" and "no-secrets" in error.message


def test_a_path_that_does_not_resolve_is_refused_before_the_engine(shop):
    tools = tools_for(shop)
    plan = tools.plan("read_file", {"project_id": "shop", "relative_path": "../shop/README.md"})
    assert (plan.verdict, plan.code) == ("deny", "path_outside_project")
    assert plan.accesses[0].policy is None  # the engine never saw it
    assert tools.plan("read_file", {"project_id": "nope", "relative_path": "README.md"}).code == "unknown_project"


def test_messages_hide_host_paths_and_only_them(shop, tmp_path):
    tools, tmp_path = tools_for(shop), Path(os.path.realpath(tmp_path))
    backslash = refused(tools, "read_file", project_id="shop", relative_path="src/..%5c..%5cetc/passwd")
    assert backslash.message.endswith("contains a backslash after percent-decoding; use '/'"), backslash.message
    drive = refused(tools, "read_file", project_id="shop", relative_path="C:/x")
    assert drive.message.startswith("path 'C:/x' is absolute"), drive.message
    absolute = refused(tools, "read_file", project_id="shop", relative_path="/etc/passwd")
    assert absolute.message.startswith("path '<outside the project>' is absolute"), absolute.message
    host = tools.shown(f"{tmp_path}/other and {shop}/src/app.ts and src/app.ts and C:/x and //srv/x")
    assert host == "<outside the project> and src/app.ts and src/app.ts and C:/x and /<outside the project>"
    assert str(tmp_path) not in tools.shown(f"through {tmp_path}: no")


def test_a_request_needs_an_allowing_answer(shop):
    tools = tools_for(shop)
    plan = tools.plan("read_file", {"project_id": "shop", "relative_path": "vault/notes.txt"})
    assert (plan.verdict, plan.rule) == ("request", "vault")
    assert plan.approval_targets() == [
        {"path": str(shop / "vault/notes.txt"), "relative": "vault/notes.txt", "root": str(shop), "need": "read"}
    ]
    for answer, code in (("deny", "approval_denied"), ("timeout", "approval_timeout"), (None, "no_approver")):
        assert refused(tools, "read_file", answer, project_id="shop", relative_path="vault/notes.txt").code == code
    assert run(tools, "read_file", "allow_once", project_id="shop", relative_path="vault/notes.txt")["text"] == (
        "approval needed\n")


def test_an_edit_needs_read_and_write_and_the_stricter_decides(tmp_path):
    repo = make_repo(tmp_path / "repo", {"notes.md": "old\n"})
    project_rules(repo, '[[paths]]\nid = "blind"\npath = "notes.md"\npolicies = { read = "deny", write = "allow" }\n')
    tools = tools_for(repo)
    write_only = tools.plan("write_file", {"project_id": "repo", "relative_path": "notes.md", "content": "x"})
    edit = tools.plan("edit_file", {"project_id": "repo", "relative_path": "notes.md",
                                    "edits": [{"old_text": "old", "new_text": "new"}]})
    assert write_only.verdict == "allow"
    assert (edit.verdict, edit.rule) == ("deny", "blind")
    assert [(p.need, p.verdict) for p in edit.accesses[0].pieces] == [("read", "deny"), ("write", "allow")]
    assert (repo / "notes.md").read_text() == "old\n"


# --- session grants -------------------------------------------------------------------


def test_a_session_grant_turns_exactly_that_need_on_that_path_into_allow(shop):
    grants = SessionGrants()
    tools = tools_for(shop, grants=grants)
    notes = str(shop / "vault/notes.txt")
    grants.add({("read", notes)})
    read = tools.plan("read_file", {"project_id": "shop", "relative_path": "vault/notes.txt"})
    assert read.verdict == "allow" and read.reason.startswith("allowed for this session earlier")
    assert read.accesses[0].policy == "request"  # the audit still says what the engine decided
    write_plan = tools.plan("write_file", {"project_id": "shop", "relative_path": "vault/notes.txt", "content": "x"})
    assert write_plan.verdict == "request"  # a read grant is not a write grant
    grants.add({("read", str(shop / "vault"))})
    listing = run(tools, "list_directory", project_id="shop", relative_path="vault")
    assert (listing["files"], listing["directories"], listing["needs_approval"]) == (["notes.txt"], [], [])
    assert listing["relative_path"] == "vault"
    grants.end()  # the workspace changed
    assert tools.plan("read_file", {"project_id": "shop", "relative_path": "vault/notes.txt"}).verdict == "request"
    top = run(tools, "list_directory", project_id="shop", relative_path=".")
    assert "vault" in top["directories"] and "src" in top["directories"]
    assert "vault" in top["needs_approval"] and "src" not in top["needs_approval"]
    assert "secrets" not in top["directories"] + top["files"] + top["links"] + top["other"]  # hidden, only counted


def test_a_grant_never_lifts_a_deny(shop):
    grants = SessionGrants()
    grants.add({("read", str(shop / "secrets/key.pem"))})
    plan = tools_for(shop, grants=grants).plan("read_file", {"project_id": "shop", "relative_path": "secrets/key.pem"})
    assert plan.verdict == "deny"


# --- batches ----------------------------------------------------------------------------


def test_one_denied_change_rejects_the_whole_patch_before_any_write(shop, isolated_user):
    audit = AuditLog()
    tools = tools_for(shop, audit=audit)
    before = (shop / "README.md").read_text()
    changes = [
        {"relative_path": "README.md", "content": "changed\n"},
        {"relative_path": "src/new.ts", "content": "new\n"},
        {"relative_path": "secrets/key.pem", "delete": True},
    ]
    plan = tools.plan("apply_patch", {"project_id": "shop", "changes": changes})
    assert (plan.verdict, plan.code, plan.rule) == ("deny", "policy_denied", "no-secrets")
    assert str(shop / "secrets/key.pem") in plan.reason
    with pytest.raises(ToolError):
        tools.conclude(plan)
    audit.close()
    assert (shop / "README.md").read_text() == before and not (shop / "src/new.ts").exists()
    assert (shop / "secrets/key.pem").exists()
    records = read_records(str(isolated_user / ".local" / "state" / "rootguard" / "audit.jsonl"))
    assert {r["relative_path"]: r["code"] for r in records} == {
        "README.md": "batch_rejected", "src/new.ts": "batch_rejected", "secrets/key.pem": "policy_denied"}


def test_a_patch_with_one_request_asks_once_for_the_whole_batch(shop):
    tools = tools_for(shop)
    changes = [{"relative_path": "README.md", "content": "changed\n"},
               {"relative_path": "vault/notes.txt", "edits": [{"old_text": "approval", "new_text": "granted"}]}]
    plan = tools.plan("apply_patch", {"project_id": "shop", "changes": changes})
    assert plan.verdict == "request"
    assert [(t["need"], t["relative"]) for t in plan.approval_targets()] == [
        ("read", "vault/notes.txt"), ("write", "vault/notes.txt")]
    assert refused(tools, "apply_patch", "deny", project_id="shop", changes=changes).code == "approval_denied"
    assert (shop / "README.md").read_text() == "shop\n"
    run(tools, "apply_patch", "allow_once", project_id="shop", changes=changes)
    assert (shop / "README.md").read_text() == "changed\n"
    assert (shop / "vault/notes.txt").read_text() == "granted needed\n"


@pytest.fixture
def nested(tmp_path) -> Path:
    """A repository and, inside it, a package opened as a second root with its own policy."""
    repo = make_repo(tmp_path / "mono", {"README.md": "mono\n", "packages/pay/index.ts": "pay\n"})
    project_rules(repo / "packages/pay", '[[paths]]\nid = "pay-docs"\npath = "docs"\npolicies = { write = "deny" }\n')
    return repo


def test_a_patch_spanning_roots_whose_policies_differ_fails_though_each_change_is_allowed(nested):
    tools = tools_for(nested, nested / "packages/pay")
    changes = [{"relative_path": "README.md", "content": "new\n"},
               {"relative_path": "packages/pay/index.ts", "content": "new\n"}]
    for change in changes:  # each change on its own is allowed
        assert tools.plan("apply_patch", {"project_id": "mono", "changes": [change]}).verdict == "allow"
    plan = tools.plan("apply_patch", {"project_id": "mono", "changes": changes})
    assert (plan.verdict, plan.code) == ("deny", "policy_denied")
    assert "spans roots whose policies differ" in plan.reason
    assert refused(tools, "apply_patch", project_id="mono", changes=changes).code == "policy_denied"
    assert (nested / "README.md").read_text() == "mono\n"
    assert (nested / "packages/pay/index.ts").read_text() == "pay\n"


def test_a_move_spanning_roots_whose_policies_differ_fails(nested):
    tools = tools_for(nested, nested / "packages/pay")
    plan = tools.plan("move_file", {"project_id": "mono", "source": "README.md",
                                    "destination": "packages/pay/README.md"})
    assert (plan.verdict, plan.code) == ("deny", "policy_denied")
    assert "spans roots whose policies differ" in plan.reason
    assert (nested / "README.md").exists() and not (nested / "packages/pay/README.md").exists()
    inside = tools.plan("move_file", {"project_id": "mono", "source": "README.md", "destination": "OLD.md"})
    assert inside.verdict == "allow"
    assert [(p.need, p.path) for p in inside.accesses[0].pieces] == [  # read too: the destination is readable
        ("delete", str(nested / "README.md")), ("write", str(nested / "OLD.md")), ("read", str(nested / "README.md"))]


def test_a_move_takes_the_stricter_end(tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "locked/keep.txt": "k\n"})
    project_rules(repo, '[[paths]]\nid = "locked"\npath = "locked"\npolicies = { write = "deny" }\n')
    tools = tools_for(repo)
    plan = tools.plan("move_file", {"project_id": "repo", "source": "a.txt", "destination": "locked/a.txt"})
    assert (plan.verdict, plan.rule) == ("deny", "locked")
    run(tools, "move_file", project_id="repo", source="a.txt", destination="b.txt")
    assert (repo / "b.txt").read_text() == "a\n" and not (repo / "a.txt").exists()


# --- links -------------------------------------------------------------------------------


def test_a_link_out_of_the_project_is_refused_by_the_resolver(tmp_path):
    repo = make_repo(tmp_path / "repo")
    outside = write(tmp_path / "outside" / "secret.txt", "s\n")
    os.symlink(outside, repo / "link.txt")
    plan = tools_for(repo).plan("read_file", {"project_id": "repo", "relative_path": "link.txt"})
    assert (plan.verdict, plan.code) == ("deny", "path_outside_project")


# --- the fast paths keep the answers (issue 15) ------------------------------------


def test_a_listing_hides_a_hard_link_to_a_denied_file_and_skips_inodes_only_without_one(tmp_path):
    """A denied file on the listed directory's device: each file's link count is read and the
    second name is hidden. No denied file there: the listing needs no inode per entry."""
    repo = make_repo(tmp_path / "repo", {".env": "KEY=1\n", "src/app.ts": "x\n"})
    os.link(repo / ".env", repo / "src" / "env-copy")
    project_rules(repo, '[[paths]]\nid = "dotenv"\npath = ".env"\npolicies = { read = "deny" }\n')
    tools = tools_for(repo)
    listing = run(tools, "list_directory", project_id="repo", relative_path="src")
    assert listing["files"] == ["app.ts"] and listing["hidden"] == 1
    assert tools.listing_needs_stats(os.stat(repo / "src").st_dev)
    plain = make_repo(tmp_path / "plain", {"src/app.ts": "x\n", "src/other.ts": "y\n"})
    os.link(plain / "src" / "app.ts", plain / "src" / "app-link.ts")  # several links, nothing denied
    open_tools = tools_for(plain)
    assert not open_tools.listing_needs_stats(os.stat(plain / "src").st_dev)
    listing = run(open_tools, "list_directory", project_id="plain", relative_path="src")
    assert listing["files"] == ["app-link.ts", "app.ts", "other.ts"] and listing["hidden"] == 0


def test_a_quick_plan_never_walks_a_stale_hard_link_index_and_decides_like_plan(tmp_path):
    """``plan_quick`` (the MCP server's event-loop path) gives up where ``plan`` would walk the
    deny rules' anchors; once the index is fresh it decides exactly as ``plan``."""
    repo = make_repo(tmp_path / "repo", {".env": "KEY=1\n", "src/app.ts": "x\n"})
    os.link(repo / ".env", repo / "src" / "env-copy")
    project_rules(repo, '[[paths]]\nid = "dotenv"\npath = ".env"\npolicies = { read = "deny" }\n')
    tools = tools_for(repo)
    args = {"project_id": "repo", "relative_path": "src/env-copy"}
    assert tools.plan_quick("read_file", args) is None  # the index was never built: the worker's turn
    slow = tools.plan("read_file", args)  # builds the index
    quick = tools.plan_quick("read_file", args)
    assert quick is not None and (quick.verdict, quick.code, quick.reason) == (slow.verdict, slow.code, slow.reason)
    assert quick.verdict == "deny" and "hard link" in quick.reason
    small = tools.plan_quick("read_file", {"project_id": "repo", "relative_path": "src/app.ts"})
    assert small is not None and small.verdict == "allow" and tools.concludes_quickly(small)
    assert tools.conclude(small)["size"] == 2


def test_a_quick_listing_waits_for_a_fresh_hard_link_index_and_lists_as_the_worker_does(tmp_path):
    """An allowed ``list_directory`` is served on the event loop only with the hard-link index
    fresh (its I/O asks it); then it is the same listing, the hard link to ``.env`` hidden."""
    repo = make_repo(tmp_path / "repo", {".env": "KEY=1\n", "src/app.ts": "x\n", "src/lib/util.ts": "y\n"})
    os.link(repo / ".env", repo / "src" / "env-copy")
    project_rules(repo, '[[paths]]\nid = "dotenv"\npath = ".env"\npolicies = { read = "deny" }\n')
    tools = tools_for(repo)
    args = {"project_id": "repo", "relative_path": "src"}
    assert tools.plan_quick("list_directory", args, then=tools.conclude) is None  # never built: the worker's turn
    slow = tools.conclude(tools.plan("list_directory", args))  # builds it
    quick = tools.plan_quick("list_directory", args, then=tools.conclude)
    assert isinstance(quick, dict)
    for listing in (slow, quick):
        assert (listing["files"], listing["directories"], listing["hidden"]) == (["app.ts"], ["lib"], 1)
