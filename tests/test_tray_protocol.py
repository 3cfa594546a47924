"""The tray protocol as data: framing, validation, error replies (no sockets, no Qt)."""

import json
import time

import pytest

from lsp_bridge.approvals import protocol
from lsp_bridge.approvals.protocol import MAX_FRAME, FrameReader, ProtocolError


def frame(obj) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def a_request(**overrides):
    req = {
        "type": "request",
        "id": "r1",
        "tool": "write_file",
        "operation": "write",
        "targets": [{"path": "/repo/.env", "relative": ".env", "root": "/repo"}],
        "rule": "protect-env",
        "reason": "matches an exclude",
        "deadline": time.time() + 60,
    }
    req.update(overrides)
    return req


def test_frames_split_across_reads_and_batched_in_one_read():
    reader = FrameReader()
    data = frame({"type": "withdraw", "id": "a"}) + frame({"type": "withdraw", "id": "b"})
    assert reader.feed(data[:7]) == []
    got = reader.feed(data[7:])
    assert [f["id"] for f in got] == ["a", "b"]


def test_malformed_frames_become_errors_and_the_stream_goes_on():
    reader = FrameReader()
    got = reader.feed(b"{not json\n" + b"\xff\xfe\n" + b"[1, 2]\n" + b"NaN\n" + b"[" * 100_000 + b"\n"
                      + frame({"type": "withdraw", "id": "ok"}))
    assert [type(x) for x in got] == [ProtocolError] * 5 + [dict]
    assert all(x.code == protocol.MALFORMED for x in got[:5])
    assert got[5]["id"] == "ok"


def test_an_oversized_frame_is_reported_once_and_skipped_to_its_newline():
    reader = FrameReader()
    got = []
    chunk = b"x" * 65536
    for _ in range(MAX_FRAME // len(chunk) + 2):
        got += reader.feed(chunk)
    assert reader.buffered < MAX_FRAME
    got += reader.feed(b"tail\n" + frame({"type": "withdraw", "id": "after"}))
    assert len(got) == 2
    assert isinstance(got[0], ProtocolError) and got[0].code == protocol.TOO_LARGE
    assert got[1]["id"] == "after"


def test_a_frame_of_exactly_the_limit_passes_and_one_more_byte_does_not():
    body = {"type": "status", "status": {"pad": ""}}
    base = len(json.dumps(body, separators=(",", ":")).encode()) + 1
    body["status"]["pad"] = "y" * (MAX_FRAME - base)
    exact = json.dumps(body, separators=(",", ":")).encode() + b"\n"
    assert len(exact) == MAX_FRAME
    assert FrameReader().feed(exact)[0]["type"] == "status"
    body["status"]["pad"] += "y"
    over = FrameReader().feed(json.dumps(body, separators=(",", ":")).encode() + b"\n")
    assert len(over) == 1 and over[0].code == protocol.TOO_LARGE
    with pytest.raises(ProtocolError):
        protocol.encode(body)


def test_hello_is_validated_and_versioned():
    msg = protocol.parse_client_message(protocol.hello("s1", "rootguard-lsp", ["/repo"], pid=42))
    assert msg == protocol.Hello("s1", 42, "rootguard-lsp", ("/repo",))
    with pytest.raises(ProtocolError) as bad:
        protocol.parse_client_message({**protocol.hello("s1", "c", []), "protocol": 2})
    assert bad.value.code == protocol.UNSUPPORTED_VERSION
    with pytest.raises(ProtocolError, match="hello.folders"):
        protocol.parse_client_message(protocol.hello("s1", "c", ["relative/dir"]))
    with pytest.raises(ProtocolError, match="hello.session"):
        protocol.parse_client_message(protocol.hello("", "c", []))


def test_a_request_lists_every_target_with_the_policy_it_needs():
    req = protocol.parse_client_message(
        a_request(operation="rename", targets=[
            {"path": "/repo/a", "relative": "a", "root": "/repo", "need": "delete"},
            {"path": "/repo/b", "relative": "b", "root": "/repo", "need": "write"},
        ])
    )
    assert req.paths == ("/repo/a", "/repo/b")
    assert [t.need for t in req.targets] == ["delete", "write"]
    write = protocol.parse_client_message(a_request(operation="metadata", targets=["/repo/x"]))
    assert write.targets[0].need == "write"  # metadata changes need write
    rename = protocol.parse_client_message(a_request(operation="rename", targets=["/repo/x"]))
    assert rename.targets[0].need is None  # unknown: "always" is not offered


def test_the_relative_path_is_derived_from_the_root_when_omitted():
    req = protocol.parse_client_message(a_request(targets=[
        {"path": "/repo/src/a.py", "root": "/repo"},
        {"path": "/repo2/x", "root": "/repo"},  # a sibling with a common prefix is not inside
        {"path": "/repo", "root": "/repo"},
        {"path": "/elsewhere/y"},
    ]))
    assert [t.relative for t in req.targets] == ["src/a.py", None, "", None]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"operation": "chmod"}, "request.operation"),
        ({"targets": []}, "request.targets"),
        ({"targets": [{"path": "relative/x"}]}, "request.targets[0].path"),
        ({"targets": [{"path": "/x", "need": "execute"}]}, "request.targets[0].need"),
        ({"deadline": "soon"}, "request.deadline"),
        ({"tool": 3}, "request.tool"),
        ({"timeout_seconds": -1}, "request.timeout_seconds"),
    ],
)
def test_a_bad_request_names_the_field_and_keeps_its_id(change, field):
    with pytest.raises(ProtocolError) as bad:
        protocol.parse_client_message(a_request(**change))
    assert bad.value.code == protocol.INVALID
    assert field in bad.value.message
    assert bad.value.ref == "r1"


def test_unknown_types_are_refused_by_both_sides():
    with pytest.raises(ProtocolError) as bad:
        protocol.parse_client_message({"type": "format_disk", "id": "x"})
    assert bad.value.code == protocol.UNKNOWN_TYPE and bad.value.ref == "x"
    with pytest.raises(ProtocolError):
        protocol.parse_server_message({"type": "hello"})


def test_decisions_round_trip_and_only_known_answers_exist():
    sent = protocol.decision("r1", "always", "saved", ["tray-write-abc"])
    got = protocol.parse_server_message(json.loads(protocol.encode(sent)))
    assert got == protocol.Decision("always", "r1", ("tray-write-abc",), "saved")
    assert got.allowed
    assert not protocol.Decision("timeout").allowed
    with pytest.raises(ValueError):
        protocol.decision("r1", "maybe")
    with pytest.raises(ProtocolError):
        protocol.parse_server_message({"type": "decision", "id": "r1", "answer": "allow_forever"})
