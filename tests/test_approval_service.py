"""The one approval service: chain, answers, time limit and session grants, with real parts.

The sessions are real (configuration files on disk); the tray is the real tray
process on a private socket; the front-end step is what the language server or
the MCP server passes in: an async function answering as a person would.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest

from lsp_bridge.approvals.client import TrayClient
from lsp_bridge.approvals.service import (
    ApprovalService,
    Outcome,
    Reply,
    TimeLimit,
    request_from_decision,
    time_limit,
)
from lsp_bridge.core.grants import always_rules
from lsp_bridge.core.session import open_session
from tests.conftest import make_repo
from tests.trayproc import start_tray, stop


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = make_repo(tmp_path / "svc", {"docs/a.md": "a\n", "docs/b.md": "b\n"})
    (repo / ".rootguard.toml").write_text(
        'version = 2\n[approvals]\ntimeout_seconds = 0.4\n'
        '[[paths]]\nid = "ask-docs"\npath = "docs"\npolicies = { read = "request", write = "request" }\n'
    )
    return repo


def request_for(session, path: Path, op: str = "read", tool: str = "read_file"):
    decision = session.policy.decide(op, str(path))
    assert decision.decision == "request"
    return request_from_decision(decision, tool)


class Person:
    """A front-end step that answers like a person: from a list, counting the prompts."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.asked: list = []

    async def __call__(self, request, limit):
        self.asked.append((request, limit))
        answer = self.answers.pop(0)
        if answer == "hang":
            await asyncio.sleep(3600)
        return Reply(answer)


def test_the_one_line_prompt_shows_bidi_and_format_characters_escaped(repo):
    """The resolver refuses control characters in a path, not a right-to-left override: the
    editor's and MCP client's prompt (``summary``) must not let a name read backwards."""
    spoof = repo / "docs" / "report\u202egpj.exe\u2066"
    spoof.write_text("x\n")
    request = request_for(open_session([str(repo)]), spoof)
    assert not [c for c in request.summary if c in "\u202e\u2066"], request.summary
    assert "report\\u202egpj.exe\\u2066" in request.summary


def test_the_time_limit_is_the_setting_plus_one_margin_rule(repo):
    assert (TimeLimit(30).seconds, TimeLimit(30).hard_stop) == (30, 35)  # margin capped at 5 s
    assert TimeLimit(4).hard_stop == 6  # half the limit below 10 s
    assert time_limit(open_session([str(repo)])).seconds == 0.4  # [approvals] timeout_seconds
    assert time_limit(open_session([])).seconds == 30  # the built-in default


async def test_without_any_approver_the_access_is_denied_saying_why(repo):
    session = open_session([str(repo)])
    outcome = await ApprovalService(lambda: session).ask(request_for(session, repo / "docs/a.md"), None)
    assert isinstance(outcome, Outcome) and not outcome.allowed
    assert outcome.answer == "no_approver" and "no approver is running" in outcome.text


async def test_allow_for_this_session_covers_the_same_need_and_path_until_the_workspace_changes(repo):
    session = open_session([str(repo)])
    service = ApprovalService(lambda: session)
    person = Person("allow_session", "allow_once", "deny")
    read_a = request_for(session, repo / "docs/a.md")
    first = await service.ask(read_a, person, approver="the editor")
    assert (first.answer, first.approver, first.text) == ("allow_session", "the editor", "Allow for this session")
    again = await service.ask(read_a, person)
    assert again.answer == "allow_session" and again.text == "allowed for this session earlier"
    assert len(person.asked) == 1
    assert (await service.ask(request_for(session, repo / "docs/a.md", op="write"), person)).answer == "allow_once"
    service.workspace_changed()
    assert (await service.ask(read_a, person)).answer == "deny"
    assert len(person.asked) == 3


async def test_an_answer_that_arrives_after_the_workspace_changed_is_not_remembered(repo):
    session = open_session([str(repo)])
    service = ApprovalService(lambda: session)

    async def slow_person(request, limit):
        service.workspace_changed()  # the folders change while the prompt is open
        return Reply("allow_session")

    read_a = request_for(session, repo / "docs/a.md")
    assert (await service.ask(read_a, slow_person)).allowed
    assert len(service.grants) == 0


async def test_an_unanswered_or_failing_prompt_is_denied_once(repo):
    session = open_session([str(repo)])
    service = ApprovalService(lambda: session)
    started = asyncio.get_running_loop().time()
    outcome = await service.ask(request_for(session, repo / "docs/a.md"), Person("hang"), approver="the editor")
    waited = asyncio.get_running_loop().time() - started
    assert outcome.answer == "timeout" and "no answer within 0.4 s" in outcome.text
    assert 0.4 <= waited < 5  # the hard stop: 0.4 s plus 0.2 s of margin

    async def broken(request, limit):
        raise ConnectionResetError("the client went away")

    failed = await service.ask(request_for(session, repo / "docs/a.md"), broken, approver="the editor")
    assert failed.answer == "deny" and "the client went away" in failed.text
    assert len(service.grants) == 0


async def test_always_reloads_the_configuration(repo):
    session = open_session([str(repo)])
    reloaded = []
    service = ApprovalService(lambda: session, on_always=lambda: reloaded.append(True))
    outcome = await service.ask(request_for(session, repo / "docs/a.md"), Person("always"))
    assert outcome.allowed and reloaded == [True]


async def test_a_running_tray_answers_before_the_front_end_is_asked(repo):
    sock_dir = Path(tempfile.mkdtemp(prefix="rg-"))
    sock = sock_dir / "t.sock"
    proc = start_tray(sock, "--headless", "--auto-answer", "deny")
    try:
        session = open_session([str(repo)])
        tray = TrayClient("s1", "pytest", [str(repo)], socket=str(sock), reconnect=False)
        assert await tray.start()
        service = ApprovalService(lambda: session, tray=tray)
        person = Person("allow_once")
        outcome = await service.ask(request_for(session, repo / "docs/a.md"), person)
        assert (outcome.answer, outcome.approver) == ("deny", "the Root Guard tray")
        assert person.asked == []
        await tray.close()
        fallback = await service.ask(request_for(session, repo / "docs/a.md"), person, approver="the editor")
        assert (fallback.answer, fallback.approver) == ("allow_once", "the editor")
    finally:
        stop(proc)
        for leftover in sock_dir.iterdir():
            leftover.unlink()
        sock_dir.rmdir()


def test_always_maps_each_need_to_a_user_rule(repo):
    notes, env = str(repo / "docs/a.md"), str(repo / ".env")
    rules = always_rules([(notes, "read"), (notes, "write"), (env, "delete")], tool="edit_file", client="mcp",
                         today="2026-01-02")
    assert [(r["path"], r["policies"]) for r in rules] == [
        (notes, {"read": "allow", "write": "allow", "delete": "request"}),  # deletion keeps asking
        (env, {"delete": "allow"}),
    ]
    assert all(r["follow_symlinks"] is False for r in rules)
    assert rules[0]["comment"] == "always allowed in the Root Guard tray on 2026-01-02: edit_file from mcp"
