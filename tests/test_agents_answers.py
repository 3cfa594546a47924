"""What each real agent CLI does with a hook's answer, checked with a stand-in hook that prints one fixed shape.

``rootguard hook`` rewrites a shell tool call to run under ``rootguard run``; that is safe only where the
agent runs the rewritten command. These tests pin, per CLI version (tests/agents/clis/package.json), which
answer shapes rewrite the command and which are ignored — an ignored rewrite runs the original command,
unconfined — and how a deny's reason reaches the model. docs/agents.md ("The agents end to end") has the
same table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents import harness
from tests.agents.clis import AGENTS, installed
from tests.agents.turns import Say

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ORIGINAL, REWRITTEN, REASON = "ORIGINAL-MARKER", "REWRITTEN-MARKER", "stand-in reason 7f3a"

# The stand-in hook: prints SHAPE with the shell command replaced (tool_input/toolArgs kept otherwise).
STAND_IN = r'''
import json, sys
event = json.load(sys.stdin)
shape = sys.argv[1]
args = dict(event.get("tool_input") or event.get("toolArgs") or {})
key = "cmd" if "cmd" in args else "command"
args[key] = "echo REWRITTEN-MARKER"
if shape == "stderr-only":
    print("stand-in reason 7f3a", file=sys.stderr)
    sys.exit(2)
shapes = {
    "allow+updatedInput": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                                  "permissionDecisionReason": "r", "updatedInput": args}},
    "updatedInput": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": args}},
    "tool_input": {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": args}},
    "allow+modifiedArgs": {"permissionDecision": "allow", "permissionDecisionReason": "r", "modifiedArgs": args},
    "allow+updatedInput(copilot)": {"permissionDecision": "allow", "updatedInput": args},
}
print(json.dumps(shapes[shape]))
'''

# (agent, the hook's answer, what the model then sees: the rewritten command's output, the original's, or the reason)
CASES = [
    ("claude", "allow+updatedInput", REWRITTEN),  # what rootguard hook answers
    ("claude", "updatedInput", REWRITTEN),  # no decision: also rewritten, Claude's own checks stay
    ("codex", "allow+updatedInput", REWRITTEN),  # what rootguard hook answers
    ("codex", "updatedInput", ORIGINAL),  # no decision: "hook failed", the ORIGINAL command runs
    ("gemini", "tool_input", REWRITTEN),  # what rootguard hook answers
    ("copilot", "allow+modifiedArgs", REWRITTEN),  # what rootguard hook answers
    ("copilot", "allow+updatedInput(copilot)", ORIGINAL),  # a key Copilot does not read: the ORIGINAL runs
    ("copilot", "stderr-only", "hook exited with code 2"),  # exit 2 blocks, but the reason on stderr is dropped
]


@pytest.fixture(scope="module", autouse=True)
def the_clis_are_installed():
    why = installed()
    if why is not None:
        pytest.skip(why)


@pytest.mark.parametrize(("name", "shape", "seen"), CASES, ids=[f"{n}-{s}" for n, s, _ in CASES])
def test_what_the_agent_runs_after_the_hooks_answer(name: str, shape: str, seen: str, isolated_user: Path,
                                                    tmp_path: Path):
    agent = AGENTS[name]
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    agent.prepare(isolated_user, project)
    agent.write_hook(isolated_user, project, f"{sys.executable} {tmp_path / 'stand_in.py'} {json.dumps(shape)}")
    run = harness.run(agent, isolated_user, project, [agent.shell(f"echo {ORIGINAL}"), Say("done")])
    said = run.result_text()
    assert seen in said, run.describe()
    others = {ORIGINAL, REWRITTEN} - {seen}
    assert not any(o in said for o in others), run.describe()
    if shape == "stderr-only":
        assert REASON not in said, run.describe()
