"""One engine in fact: every route gives ``Policy.decide``'s verdict and rule.

Hypothesis writes a user file and a project file *together* (absolute and relative
anchors, exact files, includes and excludes with braces, every verdict, links
followed or not) over one real repository (links in and out, a hard link to a
credential file, protected names), picks the editor's folders, and then asks
every route the same question:

* the engine itself: ``Policy.decide`` (the reference), ``decide_batch``,
  ``decide_granted`` and ``decide_children`` (listings and filters);
* ``rootguard check --json`` (the CLI, in process);
* the MCP file tools' plans (``read_file``, ``get_file_info``, ``write_file``,
  ``edit_file``, ``delete_file``, ``move_file``, ``apply_patch``) and the entries
  ``list_directory`` shows;
* the ``rootguard run`` profile: a file the engine lets the command read is
  visible in the sandbox, one it denies or asks about is not, and a file is
  writable there exactly when the engine allows writing it.

On the main branch of 2026-12-01 this failed at once on the floor case (a user
``deny`` on ``**/.env`` beaten, for the MCP tools only, by a project ``allow`` on a
directory): their fast path ranked rules with a second algorithm that had no floor.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lsp_bridge.cli.main import main as cli_main
from lsp_bridge.core.policy import Target
from lsp_bridge.core.session import open_session
from lsp_bridge.mcp.file_tools import FileTools, ToolError, run_list_directory
from lsp_bridge.sandbox.profile import build_profile
from tests.conftest import git

pytestmark = pytest.mark.timeout(600)
BWRAP = shutil.which("bwrap")

FILES = {
    ".env": "TOKEN=root\n",
    "a/notes.txt": "notes\n",
    "a/.env": "TOKEN=a\n",
    "a/b/c.ts": "export {};\n",
    "config/.env": "TOKEN=config\n",
    "config/app.json": "{}\n",
    "config/secret.json": "{}\n",
    "pkg/src/x.ts": "export {};\n",
    "pkg/.env": "TOKEN=pkg\n",
    "pkg/.vscode/tasks.json": "{}\n",
    "certs/id.pem": "KEY\n",
}
LINKS = {"link-env": "a/.env", "link-out": "../outside/secret.txt", "pkg/link-src": "src"}
HARD = {"hard-env": "config/.env"}
ABSENT = ["a/new.txt", "pkg/.rootguard.toml", "config/new.env", ".git/config"]
PATHS = [*FILES, *LINKS, *HARD, *ABSENT, "a", "config", "pkg/src", "../outside/secret.txt", "config/.env", "a/.env"]

ANCHORS = [".", "a", "config", "config/.env", "pkg", "certs", "certs/id.pem", "../outside", "a/b"]
INCLUDES = [[], ["**/.env"], ["a/**"], ["**/*.{pem,json}"], ["*.ts"], ["b/"], [".env*"], ["**"], ["src/**", "*.txt"]]
EXCLUDES = [[], [".env"], ["**/*.json"], ["{b,src}/**"]]


def _rule(verdicts: list[str | None]) -> st.SearchStrategy[dict]:
    verdict = st.sampled_from(verdicts)
    return st.fixed_dictionaries({
        "anchor": st.sampled_from(ANCHORS),
        "absolute": st.booleans(),
        "read": verdict, "write": verdict, "delete": verdict,
        "includes": st.sampled_from(INCLUDES),
        "excludes": st.sampled_from(EXCLUDES),
        "follow": st.booleans(),
    })


# The user file mostly restricts and the project file (the repository's, which anyone can write)
# mostly loosens: where the two meet is where a second ranking would drift from the engine.
USER_RULE = _rule(["deny", "deny", "request", "allow", None])
PROJECT_RULE = _rule(["allow", "allow", "request", "deny", None])
ROOTS = [["."], ["pkg"], ["pkg", "a"], ["a"], ["config"]]
OPS = ["read", "write", "delete", "metadata", "rename"]


def _toml(rules: list[dict], repo: Path, *, relative_ok: bool) -> str:
    """A configuration file of ``rules``; the user file's anchors are absolute, its ids ``u0``..., the
    project file's ``p0``... (ids are per source: the same id in both would hide which one won)."""
    prefix = "p" if relative_ok else "u"
    lines = ["version = 2"]
    for index, rule in enumerate(rules):
        anchor = rule["anchor"]
        path = str((repo / anchor).resolve()) if rule["absolute"] or not relative_ok else anchor
        policies = ", ".join(f'{need} = "{rule[need]}"' for need in ("read", "write", "delete") if rule[need])
        if not policies:
            policies = 'read = "allow"'
        lines += ["[[paths]]", f'id = "{prefix}{index}"', f"path = {json.dumps(path)}", f"policies = {{ {policies} }}"]
        if rule["includes"] and not anchor.endswith((".env", ".pem")):
            lines.append(f"includes = {json.dumps(rule['includes'])}")
        if rule["excludes"] and not anchor.endswith((".env", ".pem")):
            lines.append(f"excludes = {json.dumps(rule['excludes'])}")
        lines.append(f"follow_symlinks = {'true' if rule['follow'] else 'false'}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def world():
    """A repository with links in and out, a hard link and protected names; rules change per example."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        repo = base / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        for name, text in FILES.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        (base / "outside").mkdir()
        (base / "outside" / "secret.txt").write_text("outside\n")
        for name, target in LINKS.items():
            (repo / name).symlink_to(target)
        for name, target in HARD.items():
            os.link(repo / target, repo / name)
        yield base


def _engine(policy, op: str, path: str) -> tuple[str, str | None]:
    dest = path + ".moved" if op == "rename" else None
    decision = policy.decide(op, path, dest)
    return decision.decision, decision.rule


def _check(env: dict, roots: list[str], op: str, path: str) -> tuple[str, str | None]:
    argv = ["check", "--json", *[a for r in roots for a in ("--root", r)], "--op", op, path]
    if op == "rename":
        argv.append(path + ".moved")
    out = io.StringIO()
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = cli_main(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    answer = json.loads(out.getvalue())
    assert code == {"allow": 0, "deny": 1, "request": 3}[answer["decision"]]
    return answer["decision"], answer["rule"]


def _project_args(tools: FileTools, path: str) -> tuple[str, str] | None:
    """(project id, path relative to it) for ``path``, the deepest project holding it."""
    best = None
    for project in tools.projects:
        root = project.root
        if path == root or path.startswith(root + os.sep):
            if best is None or len(root) > len(best[1]):
                best = (project.id, root)
    if best is None:
        return None
    return best[0], os.path.relpath(path, best[1])


_TOOL_OF = {"read": "get_file_info", "write": "write_file", "delete": "delete_file", "metadata": None,
            "rename": "move_file"}


def _mcp(tools: FileTools, op: str, path: str) -> tuple[str, str | None] | None:
    """The MCP tool's plan for ``op`` on ``path``: (engine verdict, rule), or None when the tool
    refuses before asking the engine (a name the resolver refuses, a link it will not delete)."""
    where = _project_args(tools, path)
    tool = _TOOL_OF[op]
    if where is None or tool is None:
        return None
    pid, rel = where
    if op == "read":
        args = {"project_id": pid, "relative_path": rel}
    elif op == "write":
        args = {"project_id": pid, "relative_path": rel, "content": "x\n"}
    elif op == "delete":
        args = {"project_id": pid, "relative_path": rel}
    else:
        args = {"project_id": pid, "source": rel, "destination": rel + ".moved"}
    try:
        plan = tools.plan(tool, args)
    except ToolError:
        return None
    access = plan.accesses[0]
    if access.policy is None:
        return None
    if op == "rename":
        return plan.verdict if plan.verdict != "allow" or access.policy == "allow" else access.policy, plan.rule
    return access.policy, access.rule


def _listed(tools: FileTools, path: str) -> str | None:
    """How ``list_directory`` of the parent shows ``path``: allow (listed), request (listed, needs
    approval), deny (hidden); None when the parent is not listable."""
    parent, name = os.path.split(path)
    where = _project_args(tools, parent)
    if where is None or not os.path.isdir(parent):
        return None
    pid, rel = where
    try:
        plan = tools.plan("list_directory", {"project_id": pid, "relative_path": rel})
    except ToolError:
        return None
    if plan.verdict != "allow":
        return None
    result = run_list_directory(tools, plan)
    shown = [*result["directories"], *result["files"], *result["links"], *result["other"]]
    if name in result["needs_approval"]:
        return "request"
    return "allow" if name in shown else "deny"


def _sandbox_sees(profile, paths: list[str]) -> dict[str, str]:
    """Run the real sandbox once and ask it about every path: ``rw`` (its content reads back and it
    opens for writing), ``ro`` (it reads back only) or ``hidden`` (absent, or a mask's empty content)."""
    checks = "".join(
        f'if [ "$(cat {shlex.quote(p)} 2>/dev/null)" = {shlex.quote(Path(p).read_text().rstrip(chr(10)))} ]; then '
        f'if (: >> {shlex.quote(p)}) 2>/dev/null; then echo rw; else echo ro; fi; else echo hidden; fi\n'
        for p in paths)
    done = subprocess.run(profile.command_line(["sh", "-c", checks], bwrap=BWRAP), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return dict(zip(paths, done.stdout.split(), strict=True))


EXAMPLES = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
CONFIGS = {"user": st.lists(USER_RULE, max_size=3), "project": st.lists(PROJECT_RULE, max_size=3),
           "roots": st.sampled_from(ROOTS)}
# The two reproductions, always tried first.
FLOOR = {"anchor": ".", "absolute": True, "read": "deny", "write": "deny", "delete": None,
         "includes": ["**/.env"], "excludes": [], "follow": False}
LOOSE = {"anchor": "config", "absolute": False, "read": "allow", "write": "allow", "delete": None,
         "includes": [], "excludes": [], "follow": False}
ASKING = {"anchor": ".", "absolute": True, "read": "request", "write": None, "delete": None,
          "includes": [], "excludes": [], "follow": False}
UNDER_A = {"anchor": ".", "absolute": False, "read": "allow", "write": None, "delete": None,
           "includes": ["a/**"], "excludes": [], "follow": False}


def _session(world: Path, user: list[dict], project: list[dict], roots: list[str]):
    """The example's files and session. Each example starts with no approved configuration on record
    (``config_trust``: a fresh state directory), so every route reads the files just written."""
    repo = world / "repo"
    user_file = world / "user.toml"
    user_file.write_text(_toml(user, repo, relative_ok=False))
    (repo / ".rootguard.toml").write_text(_toml(project, repo, relative_ok=True))
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(dir=world, prefix="state-")
    env = {**os.environ, "ROOTGUARD_CONFIG": str(user_file)}
    folders = [str(repo / r) if r != "." else str(repo) for r in roots]
    session = open_session(folders, env)
    assert not [d for d in session.diagnostics if d.severity == "error"], session.diagnostics
    assert not session.held()
    return session, env, folders


@EXAMPLES
@example(user=[FLOOR], project=[LOOSE], roots=["."], asked=[("read", "config/.env"), ("write", "config/.env")])
@example(user=[ASKING], project=[UNDER_A], roots=["."], asked=[("read", "a/notes.txt")])
@given(**CONFIGS, asked=st.lists(st.tuples(st.sampled_from(OPS), st.sampled_from(PATHS)), min_size=1, max_size=6))
def test_every_route_gives_the_engines_answer(world, user, project, roots, asked):
    session, env, folders = _session(world, user, project, roots)
    policy = session.policy
    tools = FileTools(folders, env=env)
    repo = world / "repo"
    for op, rel in asked:
        path = os.path.normpath(str(repo / rel))
        expected = _engine(policy, op, path)
        assert _check(env, folders, op, path) == expected, ("check", op, rel)
        batch = policy.decide_batch([(op, path, path + ".moved") if op == "rename" else (op, path)])
        assert (batch.decision, batch.items[0].rule) == expected, ("decide_batch", op, rel)
        if op == "rename":
            continue
        target = policy.resolve(path)
        assert policy.decide_granted(op, target) == expected[0], ("decide_granted", op, rel)
        if not target.links and not target.loop and os.path.lexists(path):
            parent, name = os.path.split(target.canonical)
            listed = policy.decide_children(op, parent, [name], (), [(target.inode, target.nlink)])
            assert listed == [expected[0]], ("decide_children", op, rel)
        served = _mcp(tools, op, path)
        if served is not None:
            assert served == expected, ("mcp", op, rel)
        if op == "read" and os.path.lexists(path) and not os.path.islink(path):
            shown = _listed(tools, path)
            if shown is not None:
                assert shown == expected[0], ("list_directory", rel)


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@example(user=[FLOOR], project=[LOOSE], roots=["."])
@given(**CONFIGS)
def test_the_sandbox_shows_what_the_engine_allows(world, user, project, roots):
    """Every existing file: visible in the real ``rootguard run`` sandbox exactly when the engine allows
    reading it, writable there exactly when it allows writing it."""
    session, _, _ = _session(world, user, project, roots)
    policy = session.policy
    profile = build_profile(session, toolchain=False, landlock=False)
    paths = [str(world / "repo" / rel) for rel in [*FILES, *HARD]]
    seen = _sandbox_sees(profile, paths)
    for path in paths:
        info = os.stat(path)
        target = Target(path, inode=(info.st_dev, info.st_ino), nlink=info.st_nlink)
        read, write = policy.decide_target("read", target), policy.decide_target("write", target)
        state = seen[path]
        assert (state != "hidden") == (read.decision == "allow"), ("run: visible", path, state, read.reason)
        if state != "hidden":
            assert (state == "rw") == (write.decision == "allow"), ("run: writable", path, state, write.reason)
