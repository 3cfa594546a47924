"""Issue 10: the guard cannot be talked out of its own policy.

Every attack runs through the real ``rootguard mcp`` over stdio (mcp SDK client) and
through ``rootguard check``; the file system is byte-identical afterwards and every
refusal has an audit line with the seed 003 fields.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from lsp_bridge.mcp.audit import FIELDS, read_records
from tests.conftest import make_repo
from tests.test_mcp_server import code, server_env, text

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk_live_51Hq0ExampleNotARealKey"
P = "pkg"
USER = """version = 2
[[paths]]
id = "dotenv"
path = "."
includes = ["**/.env"]
policies = { read = "deny", write = "deny" }
"""
PROJECT = """version = 2
[[paths]]
id = "dotenv"             # same id as the user's rule: ids are per source
path = ".env"             # an exact-file allow: more specific than the user's deny
policies = { read = "allow" }
[[paths]]
id = "pem"
path = "."
includes = ["**/*.pem"]
policies = { read = "deny" }
[[paths]]
id = "secrets"
path = "."
includes = ["{secrets,keys}/**"]
policies = { read = "deny", write = "deny" }
[[paths]]
id = "private"
path = "private"
policies = { read = "deny" }
[[paths]]
id = "special"
path = "."
includes = ["special/**"]
policies = { write = "deny" }
"""


@pytest.fixture
def world(tmp_path: Path, isolated_user: Path) -> dict[str, Path]:
    base = Path(os.path.realpath(tmp_path))
    user_file = isolated_user / ".config" / "rootguard" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(USER)
    repo = make_repo(base / "pkg", {
        "src/a.ts": "export {};\n",
        ".rootguard.toml": PROJECT,
        "certs/id.pem": f"-----BEGIN KEY----- {SECRET}\n",
        "secrets/prod.env": f"DB={SECRET}\n",
        "private/notes.txt": f"{SECRET}\n",
        "special/run.sh": "echo hi\n",
        "sub/readme.md": "sub\n",
    })
    (repo / ".env").write_text(f"STRIPE_KEY={SECRET}\n")
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit.sample").write_text("#!/bin/sh\necho planted\n")
    os.chmod(hooks / "pre-commit.sample", 0o755)
    os.link(repo / ".env", repo / "src" / "env-link")  # a hard link to the denied .env
    store = base / "pnpm-store"
    store.mkdir()
    (store / "index.js").write_text("module.exports = 1;\n")
    (repo / "node_modules").mkdir()
    os.link(store / "index.js", repo / "node_modules" / "index.js")  # pnpm's layout: must keep working
    other = base / "other"
    other.mkdir()
    (other / ".rootguard.toml").write_text('version = 2\n[[paths]]\nid = "o"\npath = "hidden.txt"\n'
                                           'policies = { read = "deny" }\n')
    (other / "hidden.txt").write_text(f"{SECRET}\n")
    return {"base": base, "repo": repo, "home": isolated_user, "other": other}


def tree(root: Path) -> dict[str, tuple]:
    """Every entry below ``root`` (.git included), byte for byte, with modes."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        body = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        found[str(path.relative_to(root))] = (info.st_mode, body)
    return found


def check(world, op: str, *paths: str, roots=None, env=None) -> tuple[int, dict]:
    roots = roots or [world["repo"]]
    args = [sys.executable, "-m", "lsp_bridge.cli.main", "check", "--json",
            *[a for r in roots for a in ("--root", str(r))], "--op", op, *paths]
    run_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    done = subprocess.run(args, check=False, capture_output=True, text=True, env=run_env, timeout=60)
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


@asynccontextmanager
async def serve(roots, cwd: Path, *extra: str):
    args = ["-m", "lsp_bridge.cli.main", "mcp", "--no-tray", *[a for r in roots for a in ("--root", str(r))], *extra]
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env(), cwd=str(cwd))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(params) as client:
            yield client


ASKS = "no_approver"  # request-level, and nobody can approve here: refused, nothing done


async def test_every_attack_is_refused_through_mcp_and_the_file_system_is_unchanged(world):
    repo, home = world["repo"], world["home"]
    before = tree(repo)
    async with serve([repo], world["base"]) as client:
        async def call(tool, **args):
            return await client.call_tool(tool, {"project_id": P, **args})

        # Protected targets: candidate configuration files, .git, auto-run files.
        for name in (".rootguard.toml", "sub/.rootguard.toml", "sub/.git", ".git/config", ".vscode/tasks.json",
                     ".vscode/settings.json", ".envrc", ".husky/pre-commit", ".devcontainer/devcontainer.json"):
            result = await call("write_file", relative_path=name, content="x = 1\n")
            assert code(result) == ASKS, (name, text(result))
        moved = await call("move_file", source=".git/hooks/pre-commit.sample", destination=".git/hooks/pre-commit")
        assert code(moved) == ASKS
        # Layering: the project's same-id, more specific allow does not beat the user's deny.
        assert code(await call("read_file", relative_path=".env")) == "policy_denied"
        # Rename laundering: a file the agent may not read cannot be renamed into view.
        laundered = await call("move_file", source="certs/id.pem", destination="certs/id.txt")
        assert code(laundered) == "policy_denied" and "read" in text(laundered)
        # Hard links: a second name for the denied .env is not served; pnpm-style links are.
        linked = await call("read_file", relative_path="src/env-link")
        assert code(linked) == "policy_denied" and SECRET not in text(linked)
        assert (await call("read_file", relative_path="node_modules/index.js")).is_error is False
        # Globs: {secrets,keys}/** matches.
        assert code(await call("read_file", relative_path="secrets/prod.env")) == "policy_denied"
        assert code(await call("write_file", relative_path="special", content="x")) == "policy_denied"
        # search_files: nothing about names it may not show, never inside .git.
        found = (await call("search_files", pattern=".env")).structured_content
        assert found["matches"] == [] and "hidden" not in found and "scanned" not in found
        assert code(await call("search_files", relative_path=".git")) == "invalid_arguments"
        grep = (await call("search_files", query=SECRET)).structured_content
        assert grep["matches"] == []
        # A list as project_id: a coded error, not "Internal server error".
        odd = await client.call_tool("read_file", {"project_id": ["pkg"], "relative_path": "src/a.ts"})
        assert odd.is_error and code(odd) == "invalid_arguments"
        # Errors never name absolute host paths.
        for result in (laundered, linked, moved):
            assert str(world["base"]) not in text(result) and str(home) not in text(result)

        # An agent-caused configuration change (written behind the server's back) that loosens is held.
        (repo / ".rootguard.toml").write_text("version = 2\n")
        await anyio.sleep(1.2)
        assert code(await call("read_file", relative_path="private/notes.txt")) == "policy_denied"
        (repo / ".rootguard.toml").write_text(PROJECT)
    assert tree(repo) == before

    records = read_records(str(home / ".local" / "state" / "rootguard" / "audit.jsonl"))
    refusals = [r for r in records if r["decision"] == "deny"]
    assert len(refusals) >= 18
    for record in refusals:
        assert set(FIELDS) <= set(record), record
        assert record["code"]
    assert any(r["project_id"] is None and r["code"] == "invalid_arguments" for r in refusals)


async def test_root_containing_home_protects_the_user_config_the_audit_log_and_the_cache(world):
    home = world["home"]
    audit = home / ".local" / "state" / "rootguard"
    audit.mkdir(parents=True, exist_ok=True)
    (audit / "audit.jsonl").write_text("")
    # The kept scans the next inventory trusts: a forged one would hide a credential file.
    scans = home / ".cache" / "rootguard" / "scans"
    scans.mkdir(parents=True, exist_ok=True)
    (scans / "pkg-0.json").write_text("{}")
    before = tree(home / ".config"), tree(scans)  # (Root Guard itself may add its own caches beside scans/)
    async with serve([home], world["base"]) as client:
        pid = os.path.basename(home)
        for name in (".local/state/rootguard/audit.jsonl", ".config/rootguard/config.toml",
                     ".cache/rootguard/scans/pkg-0.json", ".cache/rootguard/scans/new.json",
                     ".cache/rootguard/history.json"):
            result = await client.call_tool("write_file", {"project_id": pid, "relative_path": name, "content": ""})
            assert code(result) == ASKS, text(result)
        moved = await client.call_tool("move_file", {"project_id": pid, "source": ".cache/rootguard/scans/pkg-0.json",
                                                     "destination": "src-scan.json"})
        assert code(moved) == ASKS, text(moved)
        deleted = await client.call_tool("delete_file", {"project_id": pid,
                                                         "relative_path": ".cache/rootguard/scans/pkg-0.json"})
        assert code(deleted) == ASKS, text(deleted)
    assert (tree(home / ".config"), tree(scans)) == before
    assert not (home / ".cache" / "rootguard" / "history.json").exists()
    assert (audit / "audit.jsonl").stat().st_size > 0  # the refusals were logged, nothing wiped
    status, data = check(world, "write", str(scans / "pkg-0.json"), roots=[home])
    assert (status, data["decision"]) == (3, "request") and "own cache" in data["reason"], data


async def test_write_size_limit(world):
    async with serve([world["repo"]], world["base"], "--max-write-bytes", "1000") as client:
        big = await client.call_tool("write_file", {"project_id": P, "relative_path": "src/big.txt", "content": "x" * 2000})
        assert code(big) == "file_too_large"
        small = await client.call_tool("write_file", {"project_id": P, "relative_path": "src/ok.txt", "content": "x" * 10})
        assert small.is_error is False
    assert not (world["repo"] / "src" / "big.txt").exists()


@pytest.mark.parametrize("op, paths, decision", [
    ("write", [".rootguard.toml"], "request"),
    ("write", ["sub/.rootguard.toml"], "request"),  # not yet existing: still a candidate
    ("write", ["sub/.git"], "request"),
    ("write", [".git/config"], "request"),
    ("write", [".vscode/tasks.json"], "request"),
    ("write", [".envrc"], "request"),
    ("rename", [".git/hooks/pre-commit.sample", ".git/hooks/pre-commit"], "request"),
    ("read", [".env"], "deny"),
    ("rename", ["certs/id.pem", "certs/id.txt"], "deny"),
    ("read", ["src/env-link"], "deny"),
    ("read", ["node_modules/index.js"], "allow"),
    ("read", ["secrets/prod.env"], "deny"),
    ("write", ["special"], "deny"),
    ("write", ["src/new.ts"], "allow"),
])
def test_every_attack_through_rootguard_check(world, op, paths, decision):
    before = tree(world["repo"])
    status, data = check(world, op, *[str(world["repo"] / p) for p in paths])
    assert data["decision"] == decision, data
    assert status == {"allow": 0, "deny": 1, "request": 3}[decision]
    assert tree(world["repo"]) == before


def test_a_root_from_rootguard_roots_loads_its_own_configuration(world):
    other = world["other"]
    env = {"ROOTGUARD_ROOTS": f"{world['repo']}{os.pathsep}{other}"}
    _, data = check(world, "read", str(other / "hidden.txt"), env=env)
    assert data["decision"] == "deny" and data["rule"] == "o"
    _, same = check(world, "read", str(other / "hidden.txt"), roots=[world["repo"], other])
    assert same["decision"] == "deny"


async def test_apply_patch_stages_every_file_and_leaves_nothing_on_failure(world):
    repo = world["repo"]
    before = tree(repo)
    async with serve([repo], world["base"]) as client:
        result = await client.call_tool("apply_patch", {"project_id": P, "changes": [
            {"relative_path": "newdir/deep/first.txt", "content": "first\n"},
            {"relative_path": "src/a.ts", "content": "changed\n"},
            {"relative_path": "sub/readme.md/oops.txt", "content": "a file below a file\n"},
        ]})
        assert result.is_error and code(result) == "not_a_directory" and "nothing was changed" in text(result)
        assert str(world["base"]) not in text(result)
    assert tree(repo) == before  # no new directory, no temporary file, src/a.ts untouched


def test_a_rename_failing_midway_restores_every_file(tmp_path):
    from lsp_bridge.mcp import safe_batch, safe_io

    root = os.path.realpath(tmp_path)
    Path(root, "one.txt").write_text("one\n")
    Path(root, "two.txt").write_text("two\n")
    before = tree(Path(root))
    with safe_batch.Batch() as batch:
        batch.stage_write(root, "one.txt", b"ONE\n")
        batch.stage_write(root, "two.txt", b"TWO\n")
        batch.stage_write(root, "three/new.txt", b"NEW\n")
        temps = sorted(p for p in os.listdir(Path(root, "three")) if p.endswith(".rootguard-tmp"))
        os.unlink(Path(root, "three", temps[0]))  # the third rename will fail
        with pytest.raises(safe_io.SafeIOError):
            batch.commit()
    assert tree(Path(root)) == before


V1 = """[workspace]
worktrees = "include"
"""


async def test_version_1_links_are_opt_in_and_cross_root_renames_are_refused(world, tmp_path):
    repo = world["repo"]
    (repo / ".rootguard.toml").write_text(V1)
    (repo / "src" / "link.ts").symlink_to("a.ts")
    _, data = check(world, "read", str(repo / "src" / "link.ts"))
    assert data["decision"] == "deny" and "follow_symlinks" in data["reason"]
    # Two roots sharing one project file: version 1 still refuses a rename between them.
    roots = [repo / "src", repo / "sub"]
    _, moved = check(world, "rename", str(repo / "src" / "a.ts"), str(repo / "sub" / "a.ts"), roots=roots)
    assert moved["decision"] == "deny" and "across roots" in moved["reason"]
    env = {"ROOTGUARD_ROOTS": str(world["other"])}
    _, external = check(world, "read", str(world["other"] / "readme.txt"), env=env)
    # version 1: external roots are opt-in, for every source (the test's tmp may sit in the OS temp
    # directory, which a version 1 project file makes request-level, never allowed)
    assert external["decision"] != "allow" and "ROOTGUARD_ROOTS" not in external["reason"]
    async with serve([repo], world["base"]) as client:
        result = await client.call_tool("read_file", {"project_id": P, "relative_path": "src/link.ts"})
        assert code(result) == "symlink_not_permitted"


def test_a_repository_admin_directory_outside_dot_git_is_protected(world, tmp_path):
    from tests.conftest import git

    ws = Path(os.path.realpath(tmp_path)) / "ws"
    app, admin = ws / "app", ws / "meta" / "app.git"
    app.mkdir(parents=True)
    admin.parent.mkdir()
    git(app, "init", "-q", "--separate-git-dir", str(admin))
    assert (app / ".git").is_file() and (admin / "HEAD").is_file()
    before = (admin / "config").read_bytes()
    _, data = check(world, "write", str(admin / "config"), roots=[ws, app])
    assert data["decision"] == "request" and "admin directory" in data["reason"], data
    assert (admin / "config").read_bytes() == before


def test_only_the_user_file_relaxes_a_protected_target_and_only_by_name(world):
    repo, user_file = world["repo"], world["home"] / ".config" / "rootguard" / "config.toml"
    (repo / ".rootguard.toml").write_text(PROJECT + '[[paths]]\nid = "envrc"\npath = ".envrc"\n'
                                          'policies = { write = "allow" }\n')
    assert check(world, "write", str(repo / ".envrc"))[1]["decision"] == "request"  # a project file cannot
    user_file.write_text(USER + '[[paths]]\nid = "tasks"\npath = "."\nincludes = [".vscode/**"]\n'
                                'policies = { write = "allow" }\n')
    assert check(world, "write", str(repo / ".vscode" / "tasks.json"))[1]["decision"] == "request"  # a glob cannot
    user_file.write_text(USER + f'[[paths]]\nid = "envrc"\npath = "{repo / ".envrc"}"\npolicies = {{ write = "allow" }}\n')
    assert check(world, "write", str(repo / ".envrc"))[1]["decision"] == "allow"  # the user names it


async def test_brace_excludes_are_honoured_through_check_and_mcp(world):
    repo = world["repo"]
    (repo / ".rootguard.toml").write_text('version = 2\n[[paths]]\nid = "read-only"\npath = "."\n'
                                          'includes = ["**"]\nexcludes = ["{notes.md,drafts}"]\n'
                                          'policies = { write = "deny" }\n')
    rows = [("notes.md", "allow"), ("drafts/today.md", "allow"), ("src/a.ts", "deny"), ("sub/notes.md", "allow")]
    for name, expected in rows:
        assert check(world, "write", str(repo / name))[1]["decision"] == expected, name
    async with serve([repo], world["base"]) as client:
        for name, expected in rows:
            result = await client.call_tool("write_file", {"project_id": P, "relative_path": name, "content": "x\n"})
            assert (code(result) or "allow") == ("allow" if expected == "allow" else "policy_denied"), name


def test_a_narrow_roots_hard_link_to_the_repositorys_denied_env_is_refused(world):
    """The seed's layout: the root is a package, ``.env`` sits at the repository top (outside the union)."""
    repo = world["repo"]
    narrow = repo / "sub"
    os.link(repo / "private" / "notes.txt", narrow / "notes-copy")  # denied by a project rule beside the root
    for name in ("notes-copy",):
        code, answer = check(world, "read", str(narrow / name), roots=[narrow])
        assert (code, answer["decision"]) == (1, "deny"), (name, answer)
        assert "hard link" in answer["reason"]
    code, answer = check(world, "read", str(narrow / "readme.md"), roots=[narrow])
    assert answer["decision"] == "allow", answer


def test_a_root_containing_home_through_check(world):
    home = world["home"]
    for name in (".config/rootguard/config.toml", ".local/state/rootguard/audit.jsonl"):
        status, data = check(world, "write", str(home / name), roots=[home])
        assert (status, data["decision"]) == (3, "request"), data
