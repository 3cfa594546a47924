"""For generated tool calls of every agent, the hook's verdict is ``rootguard check``'s on the same paths.

The hook (``lsp_bridge.agents.hook.run``, the function ``rootguard hook`` runs) and the check command
(``lsp_bridge.cli.main.main``) run in this process on a real repository with user and project rules, a
link out of the root, protected files and a store; the verdict the hook answers with (silent allow, deny,
Claude's ask or a deny saying how to approve) must be the strictest of the check's verdicts for the
operations the tool needs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_bridge.agents import hook
from lsp_bridge.cli.main import main as rootguard
from tests.conftest import make_repo

pytestmark = pytest.mark.timeout(600)  # every test has a time limit (pytest-timeout)

STRICTNESS = {"allow": 0, "request": 1, "deny": 2}
EXIT = {0: "allow", 1: "deny", 3: "request"}

CANDIDATES = [
    "src/app.ts", "src/new.ts", "docs/plan.md", ".env.local", ".claude/settings.json", "AGENTS.md", "link-out",
    "link-in", "../admin/x.ts", "../../.env", "../../node_modules/.pnpm/lib/index.js", "src/../../admin/x.ts",
    "src", ".", "..", "../checkout-evil/x", "missing/deep/file.txt", "/etc/hostname",
]

# (agent, kind) -> (tool, argument name, operations the tool needs)
TOOLS = {
    ("claude", "read"): ("Read", "file_path", ("read",)),
    ("claude", "write"): ("Write", "file_path", ("write",)),
    ("claude", "edit"): ("Edit", "file_path", ("read", "write")),
    ("claude", "list"): ("LS", "path", ("read",)),
    ("codex", "read"): ("mcp__fs__read_file", "path", ("read",)),
    ("codex", "write"): ("apply_patch", None, ("write",)),
    ("codex", "edit"): ("apply_patch", None, ("read", "write")),
    ("codex", "list"): ("mcp__fs__list_directory", "path", ("read",)),
    ("gemini", "read"): ("read_file", "absolute_path", ("read",)),
    ("gemini", "write"): ("write_file", "file_path", ("write",)),
    ("gemini", "edit"): ("replace", "file_path", ("read", "write")),
    ("gemini", "list"): ("list_directory", "dir_path", ("read",)),
    ("copilot", "read"): ("view", "path", ("read",)),
    ("copilot", "write"): ("create", "path", ("write",)),
    ("copilot", "edit"): ("edit", "path", ("read", "write")),
    ("copilot", "list"): ("grep", "path", ("read",)),
}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "shop", {
        ".env": "KEY=1\n", "node_modules/.pnpm/lib/index.js": "x\n", "packages/admin/x.ts": "x\n",
        "packages/checkout/src/app.ts": "x\n", "packages/checkout/docs/plan.md": "x\n",
        "packages/checkout/.env.local": "X=1\n", "packages/checkout/.claude/settings.json": "{}\n",
        "packages/checkout/AGENTS.md": "x\n", "packages/checkout-evil/x": "x\n",
        ".rootguard.toml": (
            'version = 2\n'
            '[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env*"]\npolicies = { read = "deny", write = "deny" }\n'
            '[[paths]]\nid = "ask-docs"\npath = "packages/checkout/docs"\npolicies = { read = "request", write = "deny" }\n'
            '[[paths]]\nid = "store"\npath = "node_modules/.pnpm"\npolicies = { read = "allow", write = "deny" }\n'
        ),
    })
    checkout = root / "packages" / "checkout"
    os.symlink("../../.env", checkout / "link-out")
    os.symlink("src/app.ts", checkout / "link-in")
    return checkout


def payload(agent: str, kind: str, cwd: Path, path: str) -> dict:
    tool, key, _ = TOOLS[(agent, kind)]
    if tool == "apply_patch":
        header = "Add File" if kind == "write" else "Update File"
        args: dict = {"command": f"*** Begin Patch\n*** {header}: {path}\n+x\n*** End Patch"}
    else:
        args = {key: path}
    if agent == "copilot":
        return {"sessionId": "p", "timestamp": 1, "cwd": str(cwd), "toolName": tool, "toolArgs": args}
    event = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}[agent]
    return {"session_id": "p", "cwd": str(cwd), "hook_event_name": event, "tool_name": tool, "tool_input": args}


def hook_verdict(agent: str, answer) -> str:
    if answer.exit_code == 0 and not answer.stdout:
        return "allow"
    if answer.exit_code == 0:
        assert agent == "claude" and json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
        return "request"
    assert answer.exit_code == 2 and answer.stderr.startswith("Root Guard: ")
    return "request" if "needs approval" in answer.stderr else "deny"


def check_verdict(root: Path, op: str, path: str) -> str:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = rootguard(["check", "--json", "--root", str(root), "--op", op, path])
    assert code in EXIT, code
    return EXIT[code]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(agent=st.sampled_from(["claude", "codex", "gemini", "copilot"]),
       kind=st.sampled_from(["read", "write", "edit", "list"]),
       relative=st.sampled_from(CANDIDATES), absolute=st.booleans())
def test_the_hooks_verdict_is_rootguard_checks(shop: Path, monkeypatch, agent, kind, relative, absolute):
    monkeypatch.setenv("ROOTGUARD_TRAY_SOCKET", str(shop.parents[2] / "no-tray.sock"))
    given_path = relative if relative.startswith("/") or not absolute else f"{shop}/{relative}"
    lexical = given_path if given_path.startswith("/") else f"{shop}/{given_path}"
    lexical = lexical.replace("/./", "/").removesuffix("/.")
    answer = hook.run(agent, json.dumps(payload(agent, kind, shop, given_path)).encode(), os.environ)
    _, _, ops = TOOLS[(agent, kind)]
    expected = max((check_verdict(shop, op, lexical) for op in ops), key=STRICTNESS.__getitem__)
    assert hook_verdict(agent, answer) == expected, (agent, kind, given_path, answer)
