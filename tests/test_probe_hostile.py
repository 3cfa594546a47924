"""``rootguard probe`` against a hostile MCP server (issue 30 class 6), through the real command.

tests/hostile_mcp_server.py swaps the fixture root for a link to a victim folder, truncates
the strace log its tracer names, serves outside content reversed / split across blocks /
in ``_meta`` / base64, reads a path from an argument named ``ref``, and plays innocent on
the old fixed fixture names. Each attack is also run once without the protection.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.probe.canaries import evidence

REPO = Path(__file__).resolve().parents[1]
ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli.main"]
HOSTILE = str(REPO / "tests" / "hostile_mcp_server.py")
pytestmark = pytest.mark.timeout(600)


def probe(tmp: Path, *extra: str, env: dict | None = None) -> tuple[int, dict, str]:
    result = subprocess.run([*ROOTGUARD, "probe", "--json", *extra, "--", sys.executable, HOSTILE, "{root}"],
                            capture_output=True, text=True, cwd=str(tmp), timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp / "tmp"), **(env or {})))
    return result.returncode, json.loads(result.stdout) if result.stdout.startswith("{") else {}, result.stderr


@pytest.fixture
def victim(tmp_path):
    (tmp_path / "tmp").mkdir()
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "important.txt").write_text("keep me\n")
    return folder


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is needed for --trace")
def test_every_disguise_is_caught_and_the_probe_is_not_harmed(tmp_path, victim):
    code, data, err = probe(tmp_path, "--trace", env={"HOSTILE_VICTIM": str(victim)})
    assert code == 1, err
    leaks = {(c["tool"], c["kind"]): " ".join(c["evidence"]) for c in data["served_outside"]}
    for kind in ("prefix_sibling", "traversal", "absolute", "symlink_out"):
        assert "content[0]" in leaks[("lookup", kind)]  # `ref`: fuzzed though not named like a path
        assert "(reversed)" in leaks[("read_reversed", kind)]
        assert "split across the result" in leaks[("read_split", kind)]
        assert "_meta" in leaks[("read_meta", kind)]
        assert "(encoded)" in leaks[("read_b64", kind)]
    lookup = next(t for t in data["tools"] if t["name"] == "lookup")
    assert lookup["path_args"] == [] and lookup["string_args"] == ["ref"]
    # the root swapped for a link to the victim: reported, and reset removed the link, never followed it
    assert any("changed outside the root" in c["evidence"][0] for c in data["served_outside"])
    assert [p.name for p in victim.iterdir()] == ["important.txt"]
    assert (victim / "important.txt").read_text() == "keep me\n"
    # the strace log was out of reach: the outside reads are there (the truncation found no file)
    opened = {o["what"]: o["ops"] for o in data["opened_outside"]}
    assert "read" in opened["outside/secret.txt"] and "read" in opened["prefix_sibling/secret.txt"]
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing left behind


def test_without_descriptors_a_reset_through_the_swapped_root_deletes_the_victim(tmp_path, victim):
    """The old reset: list the root by path and remove what is in it, then write the fixture there."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "root").symlink_to(victim)  # what the hostile server leaves
    for inner in os.listdir(base / "root"):
        path = os.path.join(base / "root", inner)
        os.unlink(path) if not os.path.isdir(path) else shutil.rmtree(path)
    (base / "root" / "inside.txt").write_text("probe inside the root\n")
    assert sorted(p.name for p in victim.iterdir()) == ["inside.txt"]  # important.txt is gone


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is needed")
def test_without_the_pipe_a_log_file_named_on_the_command_line_is_truncated(tmp_path):
    (tmp_path / "outside.txt").write_text("secret\n")
    log = tmp_path / "server.strace"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(log), "--", sys.executable, HOSTILE,
                    "--attack-log", str(log)], check=True, timeout=60, capture_output=True)
    assert "outside.txt" not in log.read_text()  # the read the log should show is gone


def test_without_the_inspection_the_disguised_answers_pass():
    marker = "9f0c2b7d1e4a6c8b3d5f7a9e1c3b5d7f"
    note = f"note {marker}\n"
    answers = {
        "reversed": {"content": [{"type": "text", "text": note[::-1]}]},
        "split": {"content": [{"type": "text", "text": note[:12]}, {"type": "text", "text": note[12:]}]},
        "_meta": {"content": [{"type": "text", "text": "ok"}], "_meta": {"note": note}},
        "base64": {"content": [{"type": "text", "text": base64.b64encode(note.encode()).decode()}]},
    }
    for name, dump in answers.items():
        naive = "\n".join(b["text"] for b in dump["content"])  # what the probe joined and searched before
        assert marker not in naive, name
        assert evidence(dump, {"outside content": marker}), name
