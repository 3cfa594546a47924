"""Attacks on the *next* session: files an agent writes to widen what a later session allows.

The setting of the issue that found them: ``mono/``, a git repository whose
``.rootguard.toml`` denies ``**/.env``, opened at the narrow root ``mono/packages/app``.
Each attack runs the way an agent would, inside ``rootguard run``, and again unconfined
(with no record of the approved configuration) to show it works there; then the next
session is asked through the real commands (``check``, ``roots``, ``run``, the MCP server).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import make_repo
from tests.test_attacks import serve
from tests.test_mcp_server import code

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]
REPO = Path(__file__).resolve().parents[1]
PROJECT = ('version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env"]\n'
           'policies = { read = "deny", write = "deny" }\n')


@pytest.fixture
def mono(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    repo = make_repo(base / "mono", {
        ".rootguard.toml": PROJECT, ".env": "TOP=secret\n", "packages/app/src/index.ts": "export {};\n",
        "packages/app/config/secret.json": '{"key": "s3cret"}\n', "packages/app/.vscode/settings.json": "{}\n",
    })
    (repo / "packages" / "app" / ".env").write_text("APP_TOKEN=live-token\n")
    return repo / "packages" / "app"


def rootguard(*args: str, cwd: Path, env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, input=input,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def check(app: Path, rel: str, env: dict | None = None) -> dict:
    return json.loads(rootguard("check", "--json", "--root", str(app), "--op", "read", str(app / rel), cwd=app,
                                env=env).stdout)


def in_sandbox(app: Path, script: str) -> subprocess.CompletedProcess:
    return rootguard("run", "--root", str(app), "--", "sh", "-c", script, cwd=app)


def fresh_state(tmp_path: Path) -> dict:
    """A state directory with no approved configuration on record: how a session without the record saw it."""
    state = tmp_path / "fresh-state"
    state.mkdir(exist_ok=True)
    return {"XDG_STATE_HOME": str(state)}


# --- a .git made in the narrow root ends the search for the repository's project file -------------

def test_a_git_file_made_in_the_root_is_stopped_inside_the_sandbox(mono):
    assert check(mono, ".env")["decision"] == "deny"  # the session the agent works in
    done = in_sandbox(mono, 'echo "gitdir: /nowhere" > .git; sleep 5; echo still-running')
    assert done.returncode == 125 and "still-running" not in done.stdout
    assert f"stopped the sandbox: {mono}/.git: it was created while the command ran" in done.stderr
    assert not (mono / ".git").exists()  # set aside, kept for the person to look at
    assert [p.name for p in mono.iterdir() if p.name.startswith(".git.rootguard-held-")]
    assert check(mono, ".env")["decision"] == "deny"


def test_a_git_file_that_got_there_anyway_is_held_for_every_next_session(mono, tmp_path):
    assert check(mono, ".env")["decision"] == "deny"  # approved: the repository's deny rules apply
    (mono / ".git").write_text("gitdir: /nowhere\n")  # by whatever route: the sandbox is one of several
    assert check(mono, ".env", fresh_state(tmp_path))["decision"] == "allow"  # what it did with no record
    held = rootguard("check", "--root", str(mono), "--op", "read", str(mono / ".env"), cwd=mono)
    assert held.returncode == 1 and "would loosen the policy" in held.stderr and "no-env" in held.stderr
    roots = json.loads(rootguard("roots", "--json", str(mono), cwd=mono).stdout)
    assert any("would loosen the policy" in w["message"] for w in roots["warnings"]), roots["warnings"]
    assert "live-token" not in in_sandbox(mono, "cat .env").stdout


async def test_a_restarted_mcp_server_keeps_the_approved_rules(mono, tmp_path):
    assert check(mono, ".env")["decision"] == "deny"
    (mono / ".git").write_text("gitdir: /nowhere\n")
    async with serve([mono], mono) as client:
        denied = await client.call_tool("read_file", {"project_id": "app", "relative_path": ".env"})
    assert code(denied) == "policy_denied" and "live-token" not in denied.content[0].text


# --- a nearer project file ----------------------------------------------------------------------

def test_a_project_file_made_in_the_root_is_stopped_and_held(mono, tmp_path):
    assert check(mono, ".env")["decision"] == "deny"
    done = in_sandbox(mono, "printf 'version = 2\\n' > .rootguard.toml; echo made")
    assert done.returncode == 125 and "stopped the sandbox" in done.stderr
    assert not (mono / ".rootguard.toml").exists()
    (mono / ".rootguard.toml").write_text("version = 2\n")  # written anyway: held
    assert check(mono, ".env", fresh_state(tmp_path))["decision"] == "allow"
    assert check(mono, ".env")["decision"] == "deny"


# --- a user file, when a root holds the home folder -------------------------------------------

def test_a_user_file_made_under_a_root_holding_home_is_stopped_and_held(tmp_path):
    base = Path(os.path.realpath(tmp_path))
    home = make_repo(base / "home", {"notes.txt": "mine\n"})
    (base / "elsewhere").mkdir()
    (base / "elsewhere" / "secret.txt").write_text("outside the root\n")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    outside = str(base / "elsewhere" / "secret.txt")

    def decided(extra: dict) -> dict:
        return json.loads(rootguard("check", "--json", "--root", str(home), "--op", "read", outside, cwd=home,
                                    env={**env, **extra}).stdout)

    assert decided({})["decision"] == "deny"  # outside every root; no user file yet
    user_dir = home / ".config" / "rootguard"
    loose = 'version = 2\n[[paths]]\nid = "all"\npath = "/"\npolicies = { read = "allow", write = "allow" }\n'
    done = rootguard("run", "--root", str(home), "--", "sh", "-c",
                     f"mkdir -p {user_dir} && printf '{loose}' > {user_dir}/config.toml; sleep 5", cwd=home, env=env)
    assert done.returncode == 125 and "stopped the sandbox" in done.stderr
    assert not (user_dir / "config.toml").exists()
    user_dir.mkdir(parents=True, exist_ok=True)
    (user_dir / "config.toml").write_text(loose)  # got there anyway: inside a root, so it waits for the person
    assert decided(fresh_state(tmp_path))["rule"] == "all"  # with no record, fully trusted
    assert decided({})["decision"] == "deny"


# --- renaming the parent of a masked file carries it out from under its rule -------------------

def test_renaming_a_masked_files_parent_is_stopped_and_undone(mono):
    project = mono / ".rootguard.toml"
    project.write_text('version = 2\n[[paths]]\nid = "secret"\npath = "config/secret.json"\n'
                       'policies = { read = "deny", write = "deny" }\n')
    assert check(mono, "config/secret.json")["decision"] == "deny"
    unconfined = subprocess.run(["sh", "-c", "mv config cfg2 && cat cfg2/secret.json"], cwd=mono, capture_output=True,
                                text=True, timeout=30)
    assert "s3cret" in unconfined.stdout  # without the sandbox the rename works, and the rule no longer covers it
    (mono / "cfg2").rename(mono / "config")
    done = in_sandbox(mono, "mv config cfg2; sleep 5; cat cfg2/secret.json")
    assert done.returncode == 125 and "s3cret" not in done.stdout
    assert "carrying" in done.stderr and "renamed" in done.stderr
    assert (mono / "config" / "secret.json").exists() and not (mono / "cfg2").exists()  # renamed back
    assert check(mono, "config/secret.json")["decision"] == "deny"


# --- files editors, shells and agents run by themselves ---------------------------------------

@pytest.mark.parametrize("name", [".vscode/tasks.json", ".envrc", ".devcontainer/devcontainer.json",
                                  ".husky/pre-commit", ".claude/settings.json", ".mcp.json", ".git/config",
                                  "team.code-workspace", ".zed/tasks.json"])
def test_an_absent_auto_run_file_cannot_be_made_in_the_sandbox(mono, name):
    target = mono / name
    done = in_sandbox(mono, f"mkdir -p {target.parent} && echo payload > {target}; sleep 5; echo still-running")
    assert done.returncode == 125 and "still-running" not in done.stdout, done.stderr
    assert not target.exists()
    held = [p for p in mono.rglob("*") if ".rootguard-held-" in p.name]
    assert held, "set aside, not deleted"


def test_replacing_an_existing_auto_run_file_by_renaming_its_parent_is_stopped_and_undone(mono):
    settings = mono / ".vscode" / "settings.json"
    done = in_sandbox(mono, "mv .vscode .vscode-old && mkdir .vscode && echo '{\"evil\": 1}' > .vscode/settings.json; "
                            "sleep 5; echo still-running")
    assert done.returncode == 125 and "still-running" not in done.stdout
    assert settings.read_text() == "{}\n" and not (mono / ".vscode-old").exists()
    for aside in mono.glob(".vscode.rootguard-held-*"):  # what took the name before the kill, kept for the person
        # the kill may land between the shell creating the file and writing it: empty or whole, never anything else
        kept = aside / "settings.json"
        assert not kept.exists() or kept.read_text() in ("", '{"evil": 1}\n')


# --- the watch blinded, the aside name taken ahead ------------------------------------------------
# A sandboxed process is charged to the host user's inotify watches: using them up leaves the host-side
# watch unable to watch a directory made next. Here in a throwaway user namespace whose own limit is
# lowered to a few hundred (the limits are per user namespace and bind every namespace below), so that
# the machine's other processes keep theirs.

EXHAUST = """
import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
os.makedirs("/tmp/w")
for n in range(100000):
    open(f"/tmp/w/{n}", "w").close()
    if libc.inotify_add_watch(fd, f"/tmp/w/{n}".encode(), 2) < 0:
        print("watches used up:", errno.errorcode[ctypes.get_errno()], flush=True)
        break
os.mkdir("sub")
time.sleep(1)
os.makedirs("sub/.git")
open("sub/.git/HEAD", "w").write("ref: refs/heads/main\\n")
open("sub/.git/config", "w").write("[core]\\n\\tfsmonitor = touch PWNED\\n")
open("sub/.rootguard.toml", "w").write("version = 2\\n")
print("planted", flush=True)
"""


def _lowered_inotify(limit: int) -> list[str]:
    lowered = ["unshare", "--user", "--map-root-user", "sh", "-c",
               f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$@"', "sh"]
    if shutil.which("unshare") is None or subprocess.run([*lowered, "true"], capture_output=True).returncode != 0:
        pytest.skip("needs unshare and a user namespace whose inotify limit can be lowered")
    return lowered


def test_names_made_where_the_used_up_watch_cannot_see_are_found_after_the_command(mono):
    lowered = _lowered_inotify(300)
    done = subprocess.run([*lowered, sys.executable, "-m", "lsp_bridge.cli.main", "run", "--root", str(mono), "--",
                           "python3", "-c", EXHAUST], capture_output=True, text=True, timeout=120, cwd=mono,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "watches used up: ENOSPC" in done.stdout and "planted" in done.stdout, done.stderr
    assert done.returncode == 125, done.stderr
    assert f"stopped the sandbox: {mono}/sub/" in done.stderr and "it was created while the command ran" in done.stderr
    assert not (mono / "sub" / ".git").exists() and not (mono / "sub" / ".rootguard.toml").exists()
    (git,) = (mono / "sub").glob(".git.rootguard-held-*")  # set aside, whole, for the person
    assert "fsmonitor" in (git / "config").read_text()
    assert list((mono / "sub").glob(".rootguard.toml.rootguard-held-*"))


def test_changed_entries_are_those_of_directories_changed_since_the_mark(tmp_path):
    from lsp_bridge.sandbox.sweep import changed_entries

    root = tmp_path / "root"
    for rel in ("old/kept.txt", "old/deep/kept.txt", "touched/kept.txt", "bound/.git/config"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    time.sleep(0.05)  # file times come from a coarse clock: the mark falls clearly after the old files
    since = time.time_ns()
    time.sleep(0.05)
    (root / "touched" / ".envrc").write_text("x")
    (root / "new" / "deeper").mkdir(parents=True)
    (root / "new" / "deeper" / "tasks.json").write_text("x")
    (root / "old" / "deep").rename(root / "old" / "moved")
    (root / "bound" / ".git" / "hooks").mkdir()  # below a fixed mount: the command could not have
    found = set(changed_entries([str(root)], [str(root / "bound")], since))
    assert found == {str(root / p) for p in ("old", "touched", "new", "new/deeper", "new/deeper/tasks.json",
                                             "touched/kept.txt", "touched/.envrc", "old/kept.txt", "old/moved",
                                             "old/moved/kept.txt")}


SWEEP_WITHOUT_ROOTS_OVERRIDE = r"""
import json, sys
from lsp_bridge.sandbox.sweep import changed_entries
unreadable = []
found = changed_entries([sys.argv[1]], [], int(sys.argv[2]), unreadable=unreadable)
print(json.dumps([sorted(found), unreadable]))
"""


def test_a_directory_the_command_made_unlistable_is_judged_or_named_never_skipped(tmp_path):
    """``chmod 000`` on a directory the command made hid its content from a plain user's sweep."""
    from lsp_bridge.sandbox.sweep import start_mark

    root = tmp_path / "root"
    since = start_mark()
    (root / "hidden" / ".git").mkdir(parents=True)
    (root / "hidden" / ".git" / "config").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    (root / "hidden").chmod(0)
    (root / "foreign").mkdir()
    argv = [sys.executable, "-c", SWEEP_WITHOUT_ROOTS_OVERRIDE, str(root), str(since)]
    if os.geteuid() == 0:  # root lists anything: run the sweep as root without the capabilities that do so
        os.chown(root / "foreign", 65534, 65534)  # and a directory of another user it may not change
        (root / "foreign").chmod(0)
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to drop root's file-mode override"
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *argv]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=str(REPO),
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    finally:
        (root / "hidden").chmod(0o700)
    assert done.returncode == 0, done.stderr
    found, unreadable = json.loads(done.stdout)
    assert str(root / "hidden" / ".git") in found  # judged: its owner's read and search bits given back
    if os.geteuid() == 0:
        assert unreadable == [str(root / "foreign")]  # cannot be judged: named, and the run fails closed


def test_a_protected_link_that_was_there_is_let_be_and_one_replaced_is_set_aside(mono):
    (mono / "AGENTS.real").write_text("be careful\n")
    (mono / "CLAUDE.md").symlink_to("AGENTS.real")  # no mount covers a link
    (mono / "AGENTS.md").symlink_to("AGENTS.real")
    time.sleep(2.2)  # before the run's start mark
    done = in_sandbox(mono, "echo made > notes.txt")
    assert done.returncode == 0 and (mono / "CLAUDE.md").is_symlink(), done.stderr
    done = in_sandbox(mono, "echo made > more.txt; rm AGENTS.md; ln -s notes.txt AGENTS.md")
    assert done.returncode == 125 and f"stopped the sandbox: {mono}/AGENTS.md" in done.stderr, done.stderr
    assert (mono / "CLAUDE.md").is_symlink() and not (mono / "AGENTS.md").exists()


def test_an_aside_name_taken_ahead_does_not_keep_the_file_in_place(mono):
    settings = mono / ".vscode" / "settings.json"
    # every name the held file could get in the next seconds, by the second, taken before the file is made
    taken = ('now=$(date +%s); for i in 0 1 2 3 4 5 6 7 8 9; do '
             'mkdir -p ".vscode/tasks.json.rootguard-held-$(date -d @$((now + i)) +%Y%m%d-%H%M%S)"; done; ')
    done = in_sandbox(mono, taken + "echo payload > .vscode/tasks.json; sleep 5; echo still-running")
    assert done.returncode == 125 and "still-running" not in done.stdout, done.stderr
    assert "where it is" not in done.stderr and not (mono / ".vscode" / "tasks.json").exists(), done.stderr
    held = [p for p in (mono / ".vscode").glob("tasks.json.rootguard-held-*") if p.is_file()]
    assert len(held) == 1 and held[0].read_text() in ("", "payload\n")
    assert settings.read_text() == "{}\n"


# --- the person approves ---------------------------------------------------------------------------

def test_config_held_shows_the_change_and_approve_applies_it_for_the_next_sessions(mono):
    assert check(mono, ".env")["decision"] == "deny"
    (mono / ".git").write_text("gitdir: /nowhere\n")
    held = rootguard("config", "held", "--json", str(mono), cwd=mono)
    assert held.returncode == 1
    (change,) = json.loads(held.stdout)["held"]
    assert change["root"] == str(mono) and "no-env" in " ".join(change["reasons"])
    assert f"now stops at {mono}" in change["reasons"][0] and '-includes = ["**/.env"]' in change["diff"]
    not_asked = rootguard("config", "approve", str(mono), cwd=mono, input="")
    assert not_asked.returncode == 2 and "--yes" in not_asked.stderr  # no terminal, no --yes: nothing approved
    assert check(mono, ".env")["decision"] == "deny"
    approved = rootguard("config", "approve", "--yes", str(mono), cwd=mono)
    assert approved.returncode == 0 and "recorded" in approved.stdout
    assert check(mono, ".env")["decision"] == "allow"  # the person's choice, from now on
    assert rootguard("config", "held", str(mono), cwd=mono).returncode == 0


def test_approving_inside_the_sandbox_records_nothing(mono, isolated_user):
    """The approved configurations live in Root Guard's state directory, which no sandbox can see or
    write: a command inside ``rootguard run`` cannot approve its own change (here Root Guard itself is
    readable inside, as an agent's toolchain would be)."""
    user = isolated_user / ".config" / "rootguard" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("version = 2\n" + "".join(
        f'[[paths]]\nid = "{name}"\npath = "{path}"\npolicies = {{ read = "allow", write = "deny" }}\n'
        for name, path in (("checkout", REPO), ("python", os.path.realpath(sys.base_prefix)))))
    assert check(mono, ".env")["decision"] == "deny"
    (mono / ".git").write_text("gitdir: /nowhere\n")
    state = os.environ["XDG_STATE_HOME"]
    inner = f"PYTHONPATH={REPO} XDG_STATE_HOME={state} {sys.executable} -m lsp_bridge.cli.main config approve --yes {mono}"
    done = in_sandbox(mono, inner + "; echo inner-exit=$?")
    assert "inner-exit=" in done.stdout, done.stderr  # it ran, and saw no record to approve against
    assert check(mono, ".env")["decision"] == "deny"  # the host's record is untouched


# --- the same root spelled another way ------------------------------------------------------------
# The record of the approved configuration belongs to the folder, not to how a command line spells
# it: each of these once found no record (a first use, so the loosened configuration was approved).

ROOT_SPELLINGS = {
    "trailing slash": lambda app: f"{app}/",
    "trailing dot": lambda app: f"{app}/.",
    "double leading slash": lambda app: f"/{app}",
    "dot-dot": lambda app: f"{app.parent}/../{app.parent.name}/{app.name}",
    "symlink": lambda app: str(_linked(app)),
}


def _linked(app: Path) -> Path:
    link = app.parents[2] / "app-link"
    if not link.is_symlink():
        link.symlink_to(app, target_is_directory=True)
    return link


def _records() -> list[str]:
    approved = Path(os.environ["XDG_STATE_HOME"]) / "rootguard" / "approved"
    return sorted(p.name for p in approved.iterdir()) if approved.is_dir() else []


@pytest.mark.parametrize("spelling", ROOT_SPELLINGS)
def test_a_held_change_stays_held_however_the_root_is_spelled(mono, tmp_path, spelling):
    assert check(mono, ".env")["decision"] == "deny"  # approved: the repository's deny rules apply
    records = _records()
    (mono / ".git").write_text("gitdir: /nowhere\n")  # a loosening: held for the next sessions
    assert check(mono, ".env", fresh_state(tmp_path))["decision"] == "allow"  # what a missed record gives
    root = ROOT_SPELLINGS[spelling](mono)
    checked = rootguard("check", "--json", "--root", root, "--op", "read", str(mono / ".env"), cwd=mono)
    assert json.loads(checked.stdout)["decision"] == "deny", checked.stderr
    assert "would loosen the policy" in checked.stderr
    ran = rootguard("run", "--root", root, "--", "cat", str(mono / ".env"), cwd=mono)
    assert "live-token" not in ran.stdout and "would loosen the policy" in ran.stderr
    held = rootguard("config", "held", "--json", root, cwd=mono)
    assert held.returncode == 1 and json.loads(held.stdout)["held"][0]["root"] == str(mono)
    assert _records() == records  # no second record under another spelling
