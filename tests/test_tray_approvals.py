"""The approval queue and the session model, as plain data with a hand-driven clock."""

import pytest

from lsp_bridge.approvals import protocol
from lsp_bridge.approvals.protocol import AccessRequest, Target
from tray.icons import icon_state
from tray.queue import ApprovalQueue, QueueError, Requester
from tray.sessions import SessionRegistry, describe


class Clock:
    """Monotonic and wall clocks the test moves by hand."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def wall(self):
        return 1_700_000_000.0 + self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def queue(clock):
    return ApprovalQueue(timeout_seconds=30, clock=clock.monotonic, wall=clock.wall)


EDITOR = Requester(conn=1, session="s1", client="rootguard-lsp", pid=10, window="checkout")
OTHER = Requester(conn=2, session="s2", client="rootguard-mcp", pid=11, window="shop")


def req(clock, rid="r1", paths=("/repo/.env",), tool="write_file", op="write", wait=300.0, timeout=None):
    return AccessRequest(
        id=rid, tool=tool, operation=op, targets=tuple(Target(p, need=protocol.DEFAULT_NEED[op]) for p in paths),
        rule="protect-env", reason="exclude", deadline=clock.wall() + wait, timeout_seconds=timeout,
    )


def test_identical_requests_merge_with_a_counter_and_one_answer_answers_all(queue, clock):
    first = queue.submit(EDITOR, req(clock, "r1"))
    second = queue.submit(EDITOR, req(clock, "r2"))
    other_path = queue.submit(EDITOR, req(clock, "r3", paths=("/repo/b",)))
    other_session = queue.submit(OTHER, req(clock, "r4"))
    assert second.merged and second.pending is first.pending
    assert first.pending.count == 2
    assert len(queue.pending) == 3  # different path, different session: separate prompts
    answers = queue.answer(first.pending, "allow_once")
    assert sorted((a.request_id, a.answer) for a in answers) == [("r1", "allow_once"), ("r2", "allow_once")]
    assert queue.head is other_path.pending
    assert other_session.pending in queue.pending
    assert queue.recent[0].answer == "allow_once" and queue.recent[0].count == 2


def test_the_countdown_denies_once_stores_nothing_and_leaves_a_missed_entry(queue, clock):
    queue.submit(EDITOR, req(clock, "r1"))
    queue.submit(EDITOR, req(clock, "r2"))
    clock.now += 29.9
    assert queue.expire() == []
    clock.now += 0.2
    answers = queue.expire()
    assert [(a.request_id, a.answer) for a in answers] == [("r1", "timeout"), ("r2", "timeout")]
    assert queue.pending == [] and queue.expire() == []
    assert queue.grants(EDITOR.conn) == frozenset()
    (missed,) = queue.missed
    assert missed.count == 2 and missed.paths == ("/repo/.env",) and "30 s" in missed.why
    assert missed.rule == "protect-env"
    queue.dismiss_missed(missed)
    assert not queue.missed


def test_interaction_pauses_the_countdown_but_not_the_requesters_deadline(queue, clock):
    pending = queue.submit(EDITOR, req(clock, wait=120)).pending
    clock.now += 10
    queue.pause(pending)
    clock.now += 100
    assert queue.expire() == [] and pending.countdown.remaining(clock.now) == pytest.approx(20)
    clock.now += 10
    (answer,) = queue.expire()
    assert answer.answer == "timeout" and answer.reason == "the requester stopped waiting"
    assert queue.missed[0].why == "the requester stopped waiting"


def test_the_countdown_is_the_shortest_of_the_setting_the_request_and_the_deadline(queue, clock):
    assert queue.submit(EDITOR, req(clock, "a", wait=300)).pending.countdown.duration == 30
    assert queue.submit(EDITOR, req(clock, "b", paths=("/b",), wait=300, timeout=5)).pending.countdown.duration == 5
    assert queue.submit(EDITOR, req(clock, "c", paths=("/c",), wait=12)).pending.countdown.duration == 12
    late = queue.submit(EDITOR, req(clock, "d", paths=("/d",), wait=-1))
    assert late.pending is None and late.answers[0].answer == "timeout"


def test_session_grants_answer_repeats_and_drop_when_folders_change_or_the_session_ends(queue, clock):
    queue.set_folders(EDITOR.conn, ["/repo"])
    pending = queue.submit(EDITOR, req(clock, "r1", paths=("/repo/a", "/repo/b"))).pending
    queue.answer(pending, "allow_session")
    again = queue.submit(EDITOR, req(clock, "r2", paths=("/repo/b",)))
    assert [a.answer for a in again.answers] == ["allow_session"] and again.pending is None
    assert queue.submit(EDITOR, req(clock, "r3", paths=("/repo/b",), op="delete")).pending  # other need
    same_need = queue.submit(EDITOR, req(clock, "r3b", paths=("/repo/a",), tool="edit_file"))
    assert [a.answer for a in same_need.answers] == ["allow_session"]  # the grant is (need, path), any tool
    assert queue.grants(EDITOR.conn) == {("write", "/repo/a"), ("write", "/repo/b")}
    assert queue.submit(OTHER, req(clock, "r4", paths=("/repo/b",))).pending  # other session
    assert queue.set_folders(EDITOR.conn, ["/repo"]) is False  # same folders: kept
    assert queue.set_folders(EDITOR.conn, ["/repo", "/elsewhere"]) is True
    assert queue.submit(EDITOR, req(clock, "r5", paths=("/repo/b",))).pending is not None
    queue.answer(queue.pending[-1], "allow_session")
    queue.end_session(EDITOR.conn)
    assert queue.grants(EDITOR.conn) == frozenset()
    assert all(p.requester.conn != EDITOR.conn for p in queue.pending)


def test_withdraw_removes_one_request_from_a_merged_prompt(queue, clock):
    pending = queue.submit(EDITOR, req(clock, "r1")).pending
    queue.submit(EDITOR, req(clock, "r2"))
    assert queue.withdraw(EDITOR.conn, "r1") and pending.count == 1
    assert not queue.withdraw(EDITOR.conn, "r1")
    assert queue.withdraw(EDITOR.conn, "r2") and queue.pending == []


def test_duplicate_ids_and_floods_are_refused(queue, clock):
    queue.submit(EDITOR, req(clock, "r1"))
    with pytest.raises(QueueError) as dup:
        queue.submit(EDITOR, req(clock, "r1"))
    assert dup.value.code == "duplicate-id"
    for i in range(protocol.MAX_PENDING_PER_CLIENT - 1):
        queue.submit(EDITOR, req(clock, f"x{i}", paths=(f"/p{i}",)))
    with pytest.raises(QueueError):
        queue.submit(EDITOR, req(clock, "one-too-many", paths=("/z",)))
    assert queue.submit(OTHER, req(clock, "fine")).pending is not None


def test_quitting_denies_everything_pending(queue, clock):
    queue.submit(EDITOR, req(clock, "r1"))
    queue.submit(OTHER, req(clock, "r2"))
    assert sorted((a.conn, a.answer) for a in queue.deny_all("the tray quit")) == [(1, "deny"), (2, "deny")]
    assert queue.pending == []


STATUS = {
    "roots": ["/shop/packages/checkout", "/shop"],
    "union": ["/shop"],
    "entries": [{"path": "/shop", "origin": "folder", "reason": "workspace folder"}],
    "shadowed": [{"path": "/shop/packages/checkout", "by": "/shop"}],
    "worktrees": [{"path": "/shop-wt/feature", "mode": "request", "repository": "/shop", "locked": True}],
    "mounts": {"roots_without_mount": ["/shop"], "mounts_outside_union": [{"source": "/opt/c", "target": "/c"}]},
    "widened": True,
    "widening": [{"folder": "/shop", "entry": "/shop/packages/checkout", "kind": "ancestor"}],
    "inventory": {"files_before": 340, "files_after": 61000, "ratio": 179.4,
                  "credentials": [{"path": "/shop/.env", "count": 4}],
                  "git": [{"path": "/shop/.git", "bytes": 671088640, "commits": 53, "deleted_sensitive": [".env"]}]},
    "summary": "⚠ union ×180",
    "widening_lines": ["/shop widens /shop/packages/checkout: it contains the narrow root, which no longer limits anything",
                       "Adding /shop widens the union: 340 → 61,000 files (×179.4).",
                       "4 credentials in 1 file: shop/.env (4)"],
    "warnings": [{"severity": "warning", "code": "union-widened", "message": "/shop widened the union"}],
}


def test_describe_shows_what_a_window_exposes():
    reg = SessionRegistry()
    reg.hello(1, protocol.Hello("s1", 10, "rootguard-lsp", ("/shop/packages/checkout",)))
    change = reg.update_status(1, STATUS)
    assert change.widened_now and change.folders_changed
    sections = {s.title: s.lines for s in describe(reg.get(1))}
    assert sections["Folders"] == ("/shop/packages/checkout", "/shop")
    assert sections["Worktrees"] == ("/shop-wt/feature [request, locked]",)
    assert sections["Effective union"] == ("/shop — folder: workspace folder",)
    assert sections["Shadowed"] == ("/shop/packages/checkout (inside /shop)",)
    assert sections["Mount mismatches"] == ("not mounted: /shop", "mounted outside the union: /opt/c → /c")
    widening = sections["Last widening"]
    assert widening[0].endswith("  ⚠ union ×180")  # the server's summary, after the time
    assert widening[1:] == tuple(STATUS["widening_lines"])  # shown as the server words them
    assert sections["Warnings"] == ("warning: /shop widened the union",)
    assert reg.get(1).label == "rootguard-lsp — checkout, shop"


def test_a_recorded_server_status_shows_the_servers_widening_text():
    """The tray shows the same summary and lines as the status bar and the warning."""
    import json
    from pathlib import Path

    recorded = Path(__file__).resolve().parent.parent / "vscode-extension/test/fixtures/status-widened.json"
    status = json.loads(recorded.read_text())
    reg = SessionRegistry()
    reg.hello(1, protocol.Hello("s1", 10, "rootguard-lsp", tuple(status["roots"][:1])))
    reg.update_status(1, status)
    widening = {s.title: s.lines for s in describe(reg.get(1))}["Last widening"]
    assert widening[0].endswith(status["summary"]) and widening[1:] == tuple(status["widening_lines"])
    assert reg.get(1).summary == status["summary"]


def test_a_hostile_status_is_shown_defensively_not_trusted():
    reg = SessionRegistry()
    reg.hello(1, protocol.Hello("s1", None, "x", ("/a",)))
    reg.update_status(1, {"roots": "nope", "union": [1, None, "/a"], "worktrees": [3, {"path": 4}],
                          "shadowed": "x", "mounts": [], "widened": "yes", "warnings": [{"message": 5}]})
    sections = {s.title: s.lines for s in describe(reg.get(1))}
    assert sections["Folders"] == ("/a",)
    assert sections["Effective union"] == ("/a",)
    assert sections["Worktrees"] == ("? [?]",)
    assert not reg.get(1).widened  # only a literal true widens


def test_the_same_widening_republished_does_not_notify_twice():
    reg = SessionRegistry()
    reg.hello(1, protocol.Hello("s1", None, "x", ("/a",)))
    assert reg.update_status(1, STATUS).widened_now
    assert not reg.update_status(1, STATUS).widened_now
    reg.acknowledge(1)
    assert not reg.any_widened


@pytest.mark.parametrize(
    "sessions, widened, pending, state",
    [(0, False, 0, "disconnected"), (1, False, 0, "clear"), (1, True, 0, "widened"),
     (1, True, 2, "pending"), (0, False, 1, "pending")],
)
def test_icon_state_precedence(sessions, widened, pending, state):
    assert icon_state(sessions, widened, pending) == state
