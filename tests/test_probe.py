"""``rootguard probe`` end to end: the real command against real stdio MCP servers.

* ``rootguard mcp --root {root}`` (ours, project id + relative path),
* the reference server ``@modelcontextprotocol/server-filesystem`` (npm, installed here),
* a small fake server (tests/fake_mcp_server.py) with a lexical prefix check and a
  path-taking tool the probe cannot call: the run fails on both counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli.main"]
FAKE = str(REPO / "tests" / "fake_mcp_server.py")
REFERENCE_PACKAGE = "@modelcontextprotocol/server-filesystem"
pytestmark = pytest.mark.timeout(1200)  # npm installs the reference server (600 s), a probe takes up to 600 s
OUTSIDE_KINDS = {"outside", "prefix_sibling", "traversal", "encoded", "absolute", "symlink_out", "dangling"}


def probe(*server: str, tmp: Path, extra: tuple[str, ...] = ()) -> tuple[int, dict, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp))
    result = subprocess.run([*ROOTGUARD, "probe", "--json", *extra, "--", *server], capture_output=True, text=True,
                            env=env, cwd=str(tmp), timeout=600)
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.returncode, data, result.stderr


def cases(data: dict, tool: str) -> dict[tuple[str, str], dict]:
    entry = next(t for t in data["tools"] if t["name"] == tool)
    return {(c["arg"], c["kind"]): c for c in entry["cases"]}


@pytest.fixture(scope="session")
def reference_server(tmp_path_factory) -> list[str]:
    """The reference filesystem server, installed with npm into a temporary prefix."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if not npm or not node:
        pytest.skip("npm/node are not installed: the reference MCP filesystem server cannot be installed")
    prefix = tmp_path_factory.mktemp("npm-reference")
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), REFERENCE_PACKAGE],
                   check=True, capture_output=True, timeout=600)
    entry = json.loads((prefix / "node_modules" / REFERENCE_PACKAGE / "package.json").read_text())["bin"]
    script = entry if isinstance(entry, str) else next(iter(entry.values()))
    return [node, str(prefix / "node_modules" / REFERENCE_PACKAGE / script), "{root}"]


def test_rootguard_mcp_every_path_tool_covered_nothing_served(tmp_path):
    code, data, err = probe(*ROOTGUARD, "mcp", "--root", "{root}", "--no-tray", tmp=tmp_path)
    assert code == 0, err
    assert data["ok"] is True and data["untested"] == [] and data["served_outside"] == []
    assert data["project_mode"] is True
    by_name = {t["name"]: t for t in data["tools"]}
    assert by_name["list_projects"]["path_args"] == []
    assert by_name["apply_patch"]["path_args"] == ["changes[].relative_path"]
    assert set(by_name["move_file"]["path_args"]) == {"source", "destination"}
    for name in ("read_file", "list_directory", "get_file_info", "edit_file", "delete_file"):
        got = cases(data, name)
        assert got[("relative_path", "inside")]["outcome"] == "permitted", got
        for kind in OUTSIDE_KINDS - {"outside"}:  # 'outside' is relative: a project server reads it inside
            assert got[("relative_path", kind)]["outcome"] == "refused", (name, kind)
    assert list(tmp_path.iterdir()) == []  # the fixture is gone; nothing else was written


def test_reference_filesystem_server(tmp_path, reference_server):
    code, data, err = probe(*reference_server, tmp=tmp_path)
    assert code == 0, err
    assert data["ok"] is True and data["untested"] == [] and data["served_outside"] == []
    assert data["project_mode"] is False
    read = cases(data, "read_text_file")
    assert read[("path", "inside")]["outcome"] == "permitted"
    assert {k for (_, k), c in read.items() if c["outcome"] == "refused"} == OUTSIDE_KINDS
    batch = cases(data, "read_multiple_files")  # per-path errors inside a successful result count as refusals
    assert all(batch[("paths", k)]["outcome"] == "refused" for k in OUTSIDE_KINDS)
    tools = {t["name"] for t in data["tools"] if t["path_args"]}
    assert {"read_text_file", "write_file", "edit_file", "move_file", "search_files", "directory_tree"} <= tools
    assert list(tmp_path.iterdir()) == []


def test_coverage_failure_and_leak_from_fake_server(tmp_path):
    code, data, err = probe(sys.executable, FAKE, "{root}", tmp=tmp_path)
    assert code == 1, err
    assert data["ok"] is False
    assert data["untested"] == ["export_report"]
    export = next(t for t in data["tools"] if t["name"] == "export_report")
    assert export["path_args"] == ["output_path"] and "signature" in export["skipped"]
    assert {c["kind"] for c in data["served_outside"]} == {"prefix_sibling", "symlink_out"}
    assert all(c["tool"] == "read_note" and c["leaked"] for c in data["served_outside"])

    text = subprocess.run([*ROOTGUARD, "probe", "--", sys.executable, FAKE, "{root}"], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp_path)),
                          timeout=300)
    assert text.returncode == 1
    assert "UNTESTED: argument 'signature'" in text.stdout
    assert "LEAK  read_note path=" in text.stdout and "FAIL: 1 untested tool(s); 2 case(s)" in text.stdout


def test_probe_bad_input(tmp_path):
    result = subprocess.run([*ROOTGUARD, "probe"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 2 and "SERVER_COMMAND" in result.stderr
    result = subprocess.run([*ROOTGUARD, "probe", "--", str(tmp_path / "no-such-server")], capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp_path)))
    assert result.returncode == 2 and "rootguard: the server" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is needed for --trace")
def test_trace_lists_what_the_server_opened_outside(tmp_path):
    code, data, err = probe(sys.executable, FAKE, "{root}", tmp=tmp_path, extra=("--trace",))
    assert code == 1, err
    opened = {o["what"]: o["ops"] for o in data["opened_outside"]}  # the names are random: "what" says which
    assert "read" in opened["prefix_sibling/secret.txt"] and "read" in opened["outside/secret.txt"]
    code, data, err = probe(*ROOTGUARD, "mcp", "--root", "{root}", "--no-tray", tmp=tmp_path, extra=("--trace",))
    assert code == 0, err
    assert not any("read" in o["ops"] for o in data["opened_outside"])  # it looks at link targets, never reads them
    assert list(tmp_path.iterdir()) == []
