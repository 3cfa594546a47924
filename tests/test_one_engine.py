"""One engine, one answer: ``rootguard check``, the LSP's ``rootguard/access`` and the MCP tools
give the same decision for the same (configuration, roots, path, operation).

The table runs on the README's layout: a package of a pnpm monorepo whose
``node_modules/react`` is a link into the shared store, with the README's
``pnpm-store`` rule in the user file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import make_repo
from tests.test_attacks import serve
from tests.test_lsp import Session, access
from tests.test_mcp_server import code

REPO = Path(__file__).resolve().parents[1]
USER = """version = 2
[[paths]]
id = "pnpm-store"
path = "../../node_modules/.pnpm"
policies = { read = "allow", write = "deny" }
"""
PROJECT = """version = 2
[[paths]]
id = "dotenv"
path = "."
includes = ["**/.env"]
policies = { read = "deny", write = "deny" }
[[paths]]
id = "pem"
path = "."
includes = ["**/*.pem"]
policies = { read = "deny" }
"""
# (operation, path(s) below the package, decision)
TABLE = [
    ("read", ["node_modules/react/package.json"], "allow"),
    ("write", ["node_modules/react/package.json"], "deny"),
    ("read", ["src/index.ts"], "allow"),
    ("write", ["src/new.ts"], "allow"),
    ("read", [".env"], "deny"),
    ("write", [".rootguard.toml"], "request"),
    ("write", [".git-hooks-free/ok.txt"], "allow"),
    ("write", [".vscode/tasks.json"], "request"),
    ("read", ["escape/secret.txt"], "deny"),
    ("read", ["hard-env"], "deny"),
    ("rename", ["certs/id.pem", "certs/id.txt"], "deny"),
    ("rename", ["src/old.ts", "src/renamed.ts"], "allow"),
]


@pytest.fixture
def package(tmp_path: Path, isolated_user: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    user_file = isolated_user / ".config" / "rootguard" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(USER)
    mono = make_repo(base / "mono", {
        "node_modules/.pnpm/react@18/node_modules/react/package.json": '{"name": "react"}\n',
        "packages/checkout/src/index.ts": "export {};\n",
        "packages/checkout/src/old.ts": "old\n",
        "packages/checkout/certs/id.pem": "KEY\n",
        "packages/checkout/.rootguard.toml": PROJECT,
    })
    pkg = mono / "packages" / "checkout"
    (pkg / ".env").write_text("SECRET=1\n")
    os.link(pkg / ".env", pkg / "hard-env")
    (pkg / "node_modules").mkdir()
    (pkg / "node_modules" / "react").symlink_to("../../../node_modules/.pnpm/react@18/node_modules/react")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("s\n")
    (pkg / "escape").symlink_to(base / "outside")
    return pkg


def by_check(pkg: Path, op: str, paths: list[str]) -> str:
    args = [sys.executable, "-m", "lsp_bridge.cli.main", "check", "--json", "--root", str(pkg), "--op", op,
            *[str(pkg / p) for p in paths]]
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    return json.loads(done.stdout)["decision"]


async def by_mcp(client, op: str, paths: list[str]) -> str:
    if op == "read":
        result = await client.call_tool("read_file", {"project_id": "checkout", "relative_path": paths[0]})
    elif op == "write":
        result = await client.call_tool("write_file", {"project_id": "checkout", "relative_path": paths[0],
                                                       "content": "x\n"})
    else:
        result = await client.call_tool("move_file", {"project_id": "checkout", "source": paths[0],
                                                      "destination": paths[1]})
    if not result.is_error:
        return "allow"
    return "request" if code(result) == "no_approver" else "deny"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "lsp_bridge"]))
async def lsp(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def test_check_access_and_mcp_agree(package, lsp):
    expected = [row[2] for row in TABLE]
    checked = [by_check(package, op, paths) for op, paths, _ in TABLE]
    assert checked == expected

    session = Session(lsp)
    await session.start([package], show_message=False)
    await session.next_status(0)
    answers = []
    for op, paths, _ in TABLE:
        result = await lsp.protocol.send_request_async(
            "rootguard/access", {"path": str(package / paths[0]), "op": op, "tool": "test",
                                 **({"dest": str(package / paths[1])} if len(paths) > 1 else {})})
        answers.append(getattr(result, "policy_decision", None) or result.decision)
    assert answers == expected
    _ = access

    async with serve([package], package.parent) as client:
        served = [await by_mcp(client, op, paths) for op, paths, _ in TABLE]
    assert served == expected


async def test_a_loosening_config_change_on_disk_is_held_and_shown_in_the_editor(package, lsp):
    session = Session(lsp)
    await session.start([package], show_message=False)
    await session.next_status(0)
    env = str(package / ".env")
    first = await lsp.protocol.send_request_async("rootguard/access", {"path": env, "op": "read"})
    assert first.decision == "deny"
    (package / ".rootguard.toml").write_text("version = 2\n")  # written behind the editor's back
    from tests.test_lsp import wait_for

    warning = await wait_for(lambda: next((m for m in lsp.messages if "would loosen" in m.message), None),
                             what="the held-change warning")
    assert "dotenv" in warning.message and ".rootguard.toml" in warning.message
    again = await lsp.protocol.send_request_async("rootguard/access", {"path": env, "op": "read"})
    assert again.decision == "deny"  # not applied silently


# --- the user floor, through every real entry point ----------------------------------------------

FLOOR_PROJECT = """version = 2
[[paths]]
id = "config-open"
path = "config"
policies = { read = "allow", write = "allow", delete = "allow" }
[[paths]]
id = "a-open"
path = "."
includes = ["a/**"]
policies = { read = "allow", write = "allow" }
"""


def floor_user(repo: Path) -> str:
    return (f'version = 2\n[[paths]]\nid = "no-env"\npath = "{repo}"\nincludes = ["**/.env"]\n'
            'policies = { read = "deny", write = "deny" }\n'
            f'[[paths]]\nid = "ask-a"\npath = "{repo}/a"\npolicies = {{ read = "request" }}\n')


@pytest.fixture
def floored(tmp_path: Path, isolated_user: Path) -> Path:
    """The issue's repository: a user deny on every ``.env`` and a user request on ``a/``, and a
    project file that allows ``config/`` (a deeper anchor) and ``a/**`` (a glob)."""
    repo = make_repo(Path(os.path.realpath(tmp_path)) / "repo", {
        "config/.env": "SECRET=floor\n", "config/app.json": "{}\n", "a/notes.txt": "ask me\n",
        ".rootguard.toml": FLOOR_PROJECT,
    })
    user_file = isolated_user / ".config" / "rootguard" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(floor_user(repo))
    return repo


FLOOR_TABLE = [  # (op, path below the repository, decision, rule)
    ("read", "config/.env", "deny", "no-env"),
    ("write", "config/.env", "deny", "no-env"),
    ("read", "a/notes.txt", "request", "ask-a"),
    ("read", "config/app.json", "allow", "config-open"),
]


def test_the_floor_holds_for_check(floored):
    for op, rel, decision, rule in FLOOR_TABLE:
        done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", "check", "--json", "--root", str(floored),
                               "--op", op, str(floored / rel)], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        answer = json.loads(done.stdout)
        assert (answer["decision"], answer["rule"]) == (decision, rule), (op, rel)


async def test_the_floor_holds_for_the_language_server(floored, lsp):
    session = Session(lsp)
    await session.start([floored], show_message=False)
    await session.next_status(0)
    for op, rel, decision, rule in FLOOR_TABLE:
        result = await lsp.protocol.send_request_async("rootguard/access", {"path": str(floored / rel), "op": op})
        assert (getattr(result, "policy_decision", None) or result.decision, result.rule) == (decision, rule)


async def test_the_floor_holds_for_every_mcp_tool(floored):
    secret = (floored / "config" / ".env").read_text()
    async with serve([floored], floored.parent) as client:
        async def call(tool, **args):
            return await client.call_tool(tool, {"project_id": "repo", **args})

        assert code(await call("read_file", relative_path="config/.env")) == "policy_denied"
        assert code(await call("get_file_info", relative_path="config/.env")) == "policy_denied"
        assert code(await call("write_file", relative_path="config/.env", content="X=1\n")) == "policy_denied"
        assert code(await call("edit_file", relative_path="config/.env",
                               edits=[{"old_text": "floor", "new_text": "gone"}])) == "policy_denied"
        assert code(await call("delete_file", relative_path="config/.env")) == "policy_denied"
        assert code(await call("move_file", source="config/.env", destination="config/env.txt")) == "policy_denied"
        assert code(await call("apply_patch", changes=[{"relative_path": "config/.env", "content": "X=1\n"}])) == (
            "policy_denied")
        listing = await call("list_directory", relative_path="config")
        assert ".env" not in listing.structured_content.get("files", []) and ".env" not in listing.content[0].text
        found = await call("search_files", relative_path=".", pattern="**/.env", query="SECRET")
        assert "floor" not in json.dumps(found.structured_content) and "floor" not in found.content[0].text
        # The request rule: nobody can approve here, so it is refused, and the text is never served.
        asked = await call("read_file", relative_path="a/notes.txt")
        assert code(asked) == "no_approver" and "ask me" not in asked.content[0].text
        assert code(await call("read_file", relative_path="config/app.json")) is None
    assert (floored / "config" / ".env").read_text() == secret


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_the_floor_holds_inside_rootguard_run(floored):
    def run(script: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", "run", "--root", str(floored), "--",
                               "sh", "-c", script], capture_output=True, text=True, timeout=120, cwd=floored,
                              env={**os.environ, "PYTHONPATH": str(REPO)})

    assert "SECRET" not in run("cat config/.env").stdout
    assert "ask me" not in run("cat a/notes.txt").stdout
    run("echo X=1 > config/.env")
    assert (floored / "config" / ".env").read_text() == "SECRET=floor\n"
    assert run("cat config/app.json").stdout == "{}\n"
