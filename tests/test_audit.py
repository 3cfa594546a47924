"""The decision audit log: where it lives, what a line holds, rotation, and ``rootguard audit``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from lsp_bridge.cli import audit as audit_command
from lsp_bridge.core import places
from lsp_bridge.mcp import audit
from lsp_bridge.mcp.audit import AuditLog, Follower, read_records


def a_record(n: int, **extra) -> dict:
    record = {
        "time": f"2026-09-10T12:00:{n % 60:02d}.000Z", "client": "test-client", "session_id": "s1",
        "protocol_version": "2026-07-28", "tool": "read_file", "project_id": "orders-api",
        "root_digest": audit.root_digest("/srv/orders-api"), "relative_path": f"src/f{n}.ts",
        "canonicalization": "resolved", "decision": "allow", "reason": "inside the host baseline",
        "correlation_id": f"c{n}",
    }
    record.update(extra)
    return record


def test_log_lives_in_the_user_state_dir_and_is_private(isolated_user):
    log = AuditLog()
    log.record(a_record(1))
    log.close()
    path = isolated_user / ".local" / "state" / "rootguard" / "audit.jsonl"
    assert places.audit_path() == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    (line,) = path.read_text().splitlines()
    assert json.loads(line) == a_record(1)
    assert set(audit.FIELDS) <= set(json.loads(line))


def test_rotation_by_size_keeps_a_bounded_number_of_files(tmp_path):
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path), max_bytes=2048, backups=2)
    for n in range(60):
        log.record(a_record(n))
    log.close()
    assert path.stat().st_size <= 2048
    assert (tmp_path / "audit.jsonl.1").exists() and (tmp_path / "audit.jsonl.2").exists()
    assert not (tmp_path / "audit.jsonl.3").exists()
    kept = [r["correlation_id"] for r in read_records(str(path), rotated=True)]
    assert kept == [f"c{n}" for n in range(60 - len(kept), 60)]  # oldest dropped, order kept


def test_two_writers_share_one_log_without_torn_lines(tmp_path):
    path = str(tmp_path / "audit.jsonl")
    first, second = AuditLog(path, max_bytes=4096), AuditLog(path, max_bytes=4096)
    for n in range(40):
        (first if n % 2 else second).record(a_record(n))
    first.close()
    second.close()
    ids = [r["correlation_id"] for r in read_records(path, rotated=True)]
    assert ids == [f"c{n}" for n in range(40)]


def test_long_fields_are_cut(tmp_path):
    path = str(tmp_path / "audit.jsonl")
    log = AuditLog(path)
    log.record(a_record(1, relative_path="a/" * 5000))
    log.close()
    (record,) = read_records(path)
    assert len(record["relative_path"]) <= audit.MAX_FIELD_CHARS + 1


def test_follower_sees_new_lines_across_a_rotation(tmp_path):
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path), max_bytes=1500, backups=3)
    log.record(a_record(0))
    follower = Follower(str(path))
    assert [r["correlation_id"] for r in follower.poll()] == ["c0"]
    assert follower.poll() == []
    seen = []
    for n in range(1, 12):  # enough to rotate at least once
        log.record(a_record(n))
        if n % 4 == 0:
            seen += [r["correlation_id"] for r in follower.poll()]
    seen += [r["correlation_id"] for r in follower.poll()]
    log.close()
    assert (tmp_path / "audit.jsonl.1").exists()
    assert seen == [f"c{n}" for n in range(1, 12)]


def test_audit_command_prints_human_lines_json_and_disagreements(tmp_path, capsys):
    path = str(tmp_path / "audit.jsonl")
    log = AuditLog(path)
    log.record(a_record(1, mirror={"roots_union": "allow", "agrees": True}))
    log.record(a_record(2, decision="deny", code="path_outside_project", relative_path="tmp/link/token",
                        mirror={"roots_union": "allow", "agrees": False}))
    log.close()

    assert audit_command.main(["--file", path]) == 0
    human = capsys.readouterr().out.splitlines()
    assert len(human) == 2
    assert "read_file" in human[1] and "orders-api:tmp/link/token" in human[1]
    assert "[path_outside_project]" in human[1] and "MIRROR: roots union would allow" in human[1]

    assert audit_command.main(["--file", path, "--json", "--lines", "1"]) == 0
    (only,) = capsys.readouterr().out.splitlines()
    assert json.loads(only)["correlation_id"] == "c2"

    assert audit_command.main(["--file", path, "--disagreements", "--json"]) == 0
    assert [json.loads(x)["correlation_id"] for x in capsys.readouterr().out.splitlines()] == ["c2"]


def test_audit_command_without_a_log_says_so(isolated_user, capsys):
    assert audit_command.main([]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no decisions logged yet" in captured.err
    assert not os.path.exists(places.audit_path())


def test_unwritable_log_raises_a_clear_error(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    log = AuditLog(str(Path(blocker) / "audit.jsonl"))
    try:
        log.record(a_record(1))
    except audit.AuditError as err:
        assert str(blocker) in str(err)
    else:
        raise AssertionError("writing below a regular file must fail")


def test_a_line_nested_past_the_parsers_depth_is_skipped_like_any_foreign_line(tmp_path):
    path = str(tmp_path / "audit.jsonl")
    log = AuditLog(path)
    log.record(a_record(1))
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("[" * 100_000 + "\n")
    log.record(a_record(2))
    log.close()
    assert [r["correlation_id"] for r in read_records(path)] == ["c1", "c2"]


def test_threads_of_one_server_lose_no_line_across_rotations(tmp_path):
    """An ``flock`` belongs to an open file, which a process's threads share: it never kept two
    threads of one server apart. Eight threads writing while the log rotates every few lines:
    every record is in the log exactly once (it lost about 5% of them without the thread lock)."""
    import threading
    from collections import Counter

    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path), max_bytes=8000, backups=1000)  # rotates every ~25 lines, keeps them all
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for n in range(500):
                log.record(a_record(n, correlation_id=f"w{worker}-{n}"))
        except BaseException as exc:  # noqa: BLE001 - any failure is the test's failure
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    log.close()
    assert not errors
    seen = Counter(r["correlation_id"] for r in read_records(str(path), rotated=True))
    assert len(seen) == 8 * 500 and set(seen.values()) == {1}


HOSTILE = "a\rb\x1b[2J\x1b]52;c;ZWNobyBoaQ==\x07\x9b31m\u202egnp.exe\u2028\x7fz"


def test_the_audit_trail_cannot_rewrite_the_terminal_that_reviews_it(isolated_user):
    """An agent chooses the paths it asks for, and they are logged as given: ``rootguard audit`` prints
    every control, format and separator character escaped (carriage return, a clear-screen, OSC 52
    clipboard writes, C1 controls, a right-to-left override, DEL), in its text and in its JSON."""
    import subprocess
    import sys

    log = AuditLog()
    log.record(a_record(1, relative_path=HOSTILE, reason=f"denied: {HOSTILE}"))
    log.close()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for extra in ([], ["--json"]):
        out = subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", "audit", *extra], capture_output=True,
                             text=True, timeout=60, env=env, check=True).stdout
        assert out.strip(), extra
        raw = [c for c in out.rstrip("\n") if c in "\r\x1b\x07\x9b\u202e\u2028\x7f"]
        assert raw == [], (extra, out)
        if extra:
            assert json.loads(out)["relative_path"] == HOSTILE  # the JSON still reads back exactly
        else:
            assert "\\x1b[2J" in out and "\\u202e" in out
