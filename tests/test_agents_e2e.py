"""The real agent CLIs (Claude Code, Codex, Gemini CLI, Copilot CLI) guarded by ``rootguard hook``, end to end.

Each CLI (pinned: tests/agents/clis/package.json, installed by scripts/install_agents.sh) runs against the
scripted fake model (tests/agents/fake_model.py) in a loopback-only network namespace where the machine
allows it, in the demo monorepo with an editor window (a real language server) opened at
``packages/checkout``, with the hook written by ``rootguard agents install``; the last tests run without
an editor window, where the agent's project folder is the boundary. Every agent runs in its most
permissive mode, so the hook is the only barrier: ``test_control_without_the_hook_the_secret_and_the_write_
go_through`` shows what the same calls do with the hook switched off. What an agent refuses by itself
before its hook runs is recorded in ``AGENT_SIDE`` and in docs/agents.md ("The agents end to end").
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from lsp_bridge.cli.demo_repo import DemoRepo, build_monorepo
from lsp_bridge.core.places import audit_path
from lsp_bridge.mcp.audit import read_records
from tests.agents import harness
from tests.agents.clis import AGENTS, Agent, Claude, installed
from tests.agents.editor import EditorWindow
from tests.agents.turns import Say, ToolCall
from tests.trayproc import start_tray, stop

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

REPO = Path(__file__).resolve().parents[1]
OWN_FILE = "src/m000/f00.ts"  # in packages/checkout
OWN_TEXT = '"checkout:0"'
NAMES = tuple(AGENTS)
BROKEN_CONFIG = "version = 2\n[[paths]]\nid = 'x'\npath = 3\n"


@pytest.fixture(scope="module", autouse=True)
def the_clis_are_installed():
    why = installed()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why)  # CI runs scripts/bootstrap.sh --test, which installs them
        pytest.skip(why)


@dataclass
class Setup:
    """One agent, guarded, in a fresh demo monorepo and a fresh home."""

    agent: Agent
    home: Path
    demo: DemoRepo
    window: EditorWindow | None = None

    @property
    def narrow(self) -> Path:
        return Path(self.demo.narrow)

    @property
    def repo(self) -> Path:
        return Path(self.demo.repo)

    def run(self, *turns, **kwargs) -> harness.AgentRun:
        run = harness.run(self.agent, self.home, self.narrow, [*turns, Say("done")], **kwargs)
        if os.environ.get("ROOTGUARD_E2E_VERBOSE"):  # -s to see what each agent did
            print(f"\n{self.agent.name}: {run.describe()}")
        return run

    def leaked(self, run: harness.AgentRun) -> list[tuple[str, str]]:
        return run.containing(self.demo.fake_secrets)

    def user_config(self, text: str) -> Path:
        path = self.home / ".config" / "rootguard" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


def records(agent: str) -> list[dict]:
    path = audit_path()
    return [r for r in read_records(path) if r.get("agent") == agent] if os.path.exists(path) else []


def rootguard(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)


def make_setup(name: str, isolated_user: Path, tmp_path: Path, *, guarded: bool = True) -> Setup:
    agent = AGENTS[name]
    demo = build_monorepo(str(tmp_path / "ws"), packages=3, files_per_package=4, narrow_files=6, worktree=False)
    setup = Setup(agent, isolated_user, demo)
    agent.prepare(isolated_user, setup.narrow)
    if guarded:
        scope = ["--project", "--folder", str(setup.narrow)] if agent.hook_scope == "project" else ["--user"]
        done = rootguard("agents", "install", name, *scope, env=agent.env(isolated_user))
        assert done.returncode == 0, done.stderr
    return setup


@pytest.fixture
def no_tray(tmp_path: Path, monkeypatch) -> None:
    """Neither the hook nor the language server reaches a tray of the person running the tests."""
    monkeypatch.setenv("ROOTGUARD_TRAY_SOCKET", str(tmp_path / "no-tray-here.sock"))


@pytest.fixture(params=NAMES)
def guarded(request, isolated_user: Path, tmp_path: Path, no_tray):
    """The agent, guarded, in the demo monorepo with an editor window opened at packages/checkout."""
    setup = make_setup(request.param, isolated_user, tmp_path)
    with EditorWindow([setup.narrow]) as window:
        setup.window = window
        yield setup


# What each agent refuses by itself, before its hook runs (so Root Guard never sees the call), as
# checked with these versions; the tests then use what reaches the hook (docs/agents.md lists these).
AGENT_SIDE = {
    "gemini": "read_file/write_file outside the workspace (its cwd and --include-directories), and any .env",
}


def read_secret_call(setup: Setup) -> tuple[ToolCall, tuple[str, ...], str]:
    """(the read tool on a secret file outside the union, extra CLI arguments, the file)."""
    name, agent = setup.agent.name, setup.agent
    if name == "gemini":  # refuses .env itself: a secrets file in an --include-directories folder reaches the hook
        return agent.read(setup.demo.tfvars), ("--include-directories", str(Path(setup.demo.tfvars).parent)), \
            setup.demo.tfvars
    if name == "codex":  # reads through its shell; view_image is its one file-reading tool with a hook call
        return ToolCall("view_image", {"path": setup.demo.env_file}), (), setup.demo.env_file
    return agent.read(setup.demo.env_file), (), setup.demo.env_file


# -- (a) the repository's secret ------------------------------------------------------------------------


def test_a_reading_the_repositorys_secret_is_blocked_and_the_reason_reaches_the_model(guarded: Setup):
    call, extra, secret_file = read_secret_call(guarded)
    run = guarded.run(call, extra=extra)
    assert not guarded.leaked(run), run.describe()
    said = run.result_text()
    assert "Root Guard" in said and os.path.basename(secret_file) in said, run.describe()
    denied = [r for r in records(guarded.agent.name) if r.get("canonicalization") == secret_file]
    assert denied and denied[-1]["decision"] == "deny" and denied[-1]["tool"] == call.name
    assert guarded.window is not None and denied[-1]["window"] == guarded.window.session  # bound to the editor


def test_a_gemini_refuses_env_itself_before_its_hook(isolated_user: Path, tmp_path: Path, no_tray):
    """What Gemini CLI does not let a hook see: its own refusal comes first (recorded, not Root Guard's)."""
    setup = make_setup("gemini", isolated_user, tmp_path)
    run = setup.run(setup.agent.read(setup.demo.env_file), extra=("--include-directories", setup.demo.repo))
    assert not setup.leaked(run), run.describe()
    assert run.results() and run.results()[0].is_error and "Root Guard" not in run.result_text(), run.describe()
    assert not records("gemini")  # the hook was never called


# -- (b) its own file -------------------------------------------------------------------------------------


def test_b_its_own_file_is_read(guarded: Setup):
    own = str(guarded.narrow / OWN_FILE)
    call = guarded.agent.shell(f"cat {OWN_FILE}") if guarded.agent.name == "codex" else guarded.agent.read(own)
    run = guarded.run(call)
    assert OWN_TEXT in run.result_text(), run.describe()
    assert not guarded.leaked(run)


# -- (c) a write outside the union -------------------------------------------------------------------------


def test_c_a_write_outside_the_union_is_blocked_and_nothing_is_written(guarded: Setup):
    extra: tuple[str, ...] = ()
    target = guarded.repo / "leak.txt"
    if guarded.agent.name == "gemini":  # refuses writes outside its workspace itself
        extra = ("--include-directories", str(guarded.repo / "infra"))
        target = guarded.repo / "infra" / "leak.txt"
    run = guarded.run(guarded.agent.write(str(target), "leaked"), extra=extra)
    assert not target.exists(), run.describe()
    said = run.result_text()
    assert "Root Guard" in said and "leak.txt" in said, run.describe()
    assert any(r.get("canonicalization") == str(target) and r["decision"] == "deny" for r in records(guarded.agent.name))


# -- (d) the shell ----------------------------------------------------------------------------------------------


def test_d_the_shell_runs_confined_the_secret_stays_out_and_the_rest_runs(guarded: Setup):
    run = guarded.run(guarded.agent.shell(f"cat ../../.env; cat {OWN_FILE}"))
    assert not guarded.leaked(run), run.describe()
    said = run.result_text()
    # the agent ran the rewritten command: the package's file printed, the repository's .env not there
    assert OWN_TEXT in said and ".env" in said, run.describe()
    assert records(guarded.agent.name)[-1]["code"] == "shell-confined"


# -- (e) a request rule, answered by a real tray -------------------------------------------------------------


def test_e_a_request_rule_is_answered_allow_once_by_a_real_tray_and_the_audit_names_the_agent(guarded: Setup):
    notes = guarded.narrow / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text("the plan: ship on friday\n")
    guarded.user_config(f'version = 2\n[[paths]]\nid = "ask-notes"\npath = "{notes}"\n'
                        'policies = { read = "request", write = "request" }\n')
    sock_dir = Path(tempfile.mkdtemp(prefix="rg-"))
    os.chmod(sock_dir, 0o700)
    tray = start_tray(sock_dir / "t.sock", "--headless", "--auto-answer", "allow_once")
    try:
        env = {"ROOTGUARD_TRAY_SOCKET": str(sock_dir / "t.sock")}
        if guarded.agent.name == "codex":  # its file tool is apply_patch: the approved write lands
            target = notes / "next.md"
            run = guarded.run(guarded.agent.write(str(target), "approved"), env=env)
            assert target.is_file() and target.read_text() == "approved\n", run.describe()
        else:
            target = notes / "plan.md"
            run = guarded.run(guarded.agent.read(str(target)), env=env)
            assert "ship on friday" in run.result_text(), run.describe()
    finally:
        stop(tray)
        subprocess.run(["rm", "-rf", str(sock_dir)], check=False, timeout=120)
    approved = [r for r in records(guarded.agent.name) if r.get("canonicalization") == str(target)]
    assert approved and approved[-1]["approval"] == "allow_once", approved
    assert approved[-1]["client"] == f"rootguard hook {guarded.agent.name}"
    assert approved[-1]["approver"] == "the Root Guard tray"


# -- (f) a broken configuration --------------------------------------------------------------------------------


def test_f_a_broken_configuration_blocks_even_its_own_file(guarded: Setup):
    config = guarded.user_config(BROKEN_CONFIG)
    own = str(guarded.narrow / OWN_FILE)
    call = guarded.agent.shell(f"cat {OWN_FILE}") if guarded.agent.name == "codex" else guarded.agent.read(own)
    run = guarded.run(call)
    assert not run.containing([OWN_TEXT.strip('"')]), run.describe()
    said = run.result_text()
    assert "Root Guard" in said and f"{config}:4:8" in said, run.describe()


# -- the control: the same calls with the hook switched off --------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_control_without_the_hook_the_secret_and_the_write_go_through(name: str, isolated_user: Path,
                                                                     tmp_path: Path):
    """The tests above are worth something only if the unguarded agent would leak: it does."""
    setup = make_setup(name, isolated_user, tmp_path, guarded=False)
    call, extra, _ = read_secret_call(setup)
    if name == "codex":
        call = setup.agent.shell(f"cat {setup.demo.env_file}")
    target = setup.repo / ("infra/leak.txt" if name == "gemini" else "leak.txt")
    if name == "gemini":
        extra = ("--include-directories", str(setup.repo / "infra"))
    run = setup.run(call, setup.agent.write(str(target), "leaked"), extra=extra)
    assert setup.leaked(run), run.describe()
    assert target.is_file(), run.describe()


# -- (g) Claude: widening from the agent's side ---------------------------------------------------------------------


def test_g_claude_permission_request_adding_the_repository_is_warned_and_denied(isolated_user: Path, tmp_path: Path,
                                                                               no_tray):
    """Claude proposes ``addDirectories`` of the repository root for a command writing there; its
    PermissionRequest hook (run while Claude asks its SDK host) warns with the inventory and denies."""
    setup = make_setup("claude", isolated_user, tmp_path)
    setup.user_config('version = 2\n[agents]\nshell = "allow"\n')  # Claude's own check asks: the hook sees the ask
    target = setup.repo / "leak.txt"
    claude = Claude()
    sdk = {"send": [{"type": "user", "message": {"role": "user", "content": "Do the task."}}], "host_deny_after": 40}
    run = setup.run(claude.shell("echo leaked > ../../leak.txt"), argv=claude.sdk_argv(), sdk=sdk)
    assert not target.exists(), run.describe()
    said = run.result_text()
    assert "widened the agent's boundary" in said and "run_case" not in said, run.describe()
    widened = [r for r in records("claude") if r.get("code") == "agent-widened"]
    assert widened and widened[-1]["decision"] == "deny" and widened[-1]["added"] == [str(setup.repo)]


def test_g_claude_directory_added_is_warned_and_the_boundary_stays(isolated_user: Path, tmp_path: Path, no_tray):
    """``register_repo_root`` (the SDK's /add-dir) of the repository root: the DirectoryAdded hook warns
    with the inventory (it cannot block: the directory is already added); Root Guard's boundary stays."""
    setup = make_setup("claude", isolated_user, tmp_path)
    claude = Claude()
    # register_repo_root takes a directory under the cwd or under one given with --add-dir at launch
    # the DirectoryAdded hook runs after the answer to register_repo_root, beside the session: the prompt
    # waits for its audit line (a session that ends at once can end before the hook has written it)
    sdk = {"send": [{"type": "control_request", "request_id": "add-1",
                     "request": {"subtype": "register_repo_root", "directory": str(setup.repo)}},
                    {"wait_for": {"path": audit_path(), "text": "agent-widened", "timeout": 60}},
                    {"type": "user", "message": {"role": "user", "content": "Do the task."}}],
           "host_deny_after": 40}
    run = setup.run(claude.read(setup.demo.env_file), argv=claude.sdk_argv(("--add-dir", str(tmp_path / "ws"))),
                    sdk=sdk)
    assert any(e.get("type") == "control_response" and e["response"].get("request_id") == "add-1"
               and e["response"].get("subtype") == "success" for e in run.events), run.describe()
    widened = [r for r in records("claude") if r.get("code") == "agent-widened"]
    assert widened and widened[0]["added"] == [str(setup.repo)] and widened[0]["event"] == "DirectoryAdded"
    assert "widened the agent's boundary" in widened[0]["reason"]
    assert not setup.leaked(run), run.describe()
    assert "Root Guard" in run.result_text(), run.describe()


# -- without an editor window: the agent's project folder ------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_without_an_editor_window_the_project_folder_is_the_boundary(name: str, isolated_user: Path, tmp_path: Path,
                                                                     no_tray):
    setup = make_setup(name, isolated_user, tmp_path)
    call, extra, secret_file = read_secret_call(setup)
    target = setup.repo / ("infra/leak.txt" if name == "gemini" else "leak.txt")
    if name == "gemini":
        extra = ("--include-directories", f"{Path(secret_file).parent},{target.parent}")
    run = setup.run(call, setup.agent.write(str(target), "leaked"), setup.agent.shell("cat ../../.env"), extra=extra)
    assert not setup.leaked(run), run.describe()
    assert not target.exists(), run.describe()
    denied = [r for r in records(name) if r.get("canonicalization") in (secret_file, str(target))]
    assert [r["decision"] for r in denied] == ["deny", "deny"], denied
    assert all(r["window"] is None and "project folder" in r["reason"] for r in denied)
