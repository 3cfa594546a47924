"""``rootguard trace`` end to end on a pnpm-style monorepo with a linked worktree.

The real command traces a small Node build (a ``require`` of a package in the
pnpm store, a ``tsconfig`` that extends a file above the root, a dotenv-style
upward search for ``.env``) and ``git status`` in the worktree; the proposed
grants are then given to ``rootguard run``, which must make the same command pass
while ``.env`` stays invisible.
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

from lsp_bridge.cli.demo_repo import build_monorepo
from lsp_bridge.trace.strace import parse_lines, skip_until_exec

REPO = Path(__file__).resolve().parents[1]
ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli.main"]
pytestmark = pytest.mark.timeout(900)  # strace rounds of a node build (300-600 s at most each)
NEEDS = pytest.mark.skipif(not (shutil.which("strace") and shutil.which("bwrap") and shutil.which("node")),
                           reason="strace, bubblewrap and node are needed (scripts/bootstrap.sh --test installs them)")

BUILD_JS = """const fs = require("fs"), path = require("path");
function load(p) {
  const c = JSON.parse(fs.readFileSync(p, "utf8"));
  if (!c.extends) return c;
  const b = load(path.resolve(path.dirname(p), c.extends));
  return {...b, ...c, compilerOptions: {...b.compilerOptions, ...c.compilerOptions}};
}
const cfg = load(path.join(__dirname, "tsconfig.json"));
const pad = require("left-pad");
let dir = __dirname, env = null;
for (;;) {  // what dotenv does: look for .env upward
  if (fs.existsSync(path.join(dir, ".env"))) { env = path.join(dir, ".env"); break; }
  if (path.dirname(dir) === dir) break;
  dir = path.dirname(dir);
}
fs.mkdirSync(path.join(__dirname, "dist"), {recursive: true});
fs.writeFileSync(path.join(__dirname, "dist", "out.txt"), pad("built", 8) + "\\n");
console.log("build ok, strict=" + cfg.compilerOptions.strict + (env ? " env=" + env : " no .env"));
process.exit(cfg.compilerOptions.strict === true ? 0 : 3);
"""

FMT_JS = """const fs = require("fs"), path = require("path");
let dir = __dirname, found = null;
for (;;) {  // what prettier does: look for its configuration upward, fall back to defaults
  if (fs.existsSync(path.join(dir, ".prettierrc"))) { found = path.join(dir, ".prettierrc"); break; }
  if (path.dirname(dir) === dir) break;
  dir = path.dirname(dir);
}
console.log(found ? "config " + found : "defaults");
"""


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), **extra)
    return env


@pytest.fixture
def mono(tmp_path):
    demo = build_monorepo(str(tmp_path / "ws"), packages=3, files_per_package=3, narrow_files=4, commits=3,
                          store_files_per_package=2)
    tree = Path(demo.worktree)
    root = tree / "packages" / "checkout"
    pkg = Path(demo.store) / "left-pad@1.3.0" / "node_modules" / "left-pad"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text('{"name": "left-pad", "version": "1.3.0", "main": "index.js"}\n')
    (pkg / "index.js").write_text("module.exports = (s, n) => String(s).padStart(n);\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "left-pad").symlink_to(os.path.relpath(pkg, root / "node_modules"))
    (root / "build.js").write_text(BUILD_JS)
    (root / "fmt.js").write_text(FMT_JS)
    (tree / ".env").write_text("STRIPE_KEY=sk_live_" + "51Hq0Example" + "NotARealKey0000\n")
    (tree / ".prettierrc").write_text('{"semi": false}\n')
    # An index older than the files would make git re-read every file (racy entries): settle it.
    past = time.time() - 7200
    for top, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files + dirs:
            os.utime(os.path.join(top, name), (past, past), follow_symlinks=False)
    subprocess.run(["git", "update-index", "-q", "--really-refresh"], cwd=tree, capture_output=True, timeout=120)
    return {"demo": demo, "tree": tree, "root": root, "pkg": pkg, "repo": Path(demo.repo)}


def trace(root: Path, *command: str, home: Path, extra=()) -> tuple[int, dict, str]:
    result = subprocess.run([*ROOTGUARD, "trace", "--json", "--root", str(root), *extra, "--", *command],
                            capture_output=True, text=True, timeout=300, env=env_for(home), cwd=str(root.parent))
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.returncode, data, result.stderr


@NEEDS
def test_node_build_and_git_status_need_exactly_these_files(mono, isolated_user):
    root, tree, repo, pkg = mono["root"], mono["tree"], mono["repo"], mono["pkg"]
    code, data, err = trace(root, "sh", "-c", "node build.js && git status --short -- .", home=isolated_user)
    assert code == 0, err
    assert data["exit_code"] == 0 and "build ok, strict=true env=" in err  # one pass: everything visible
    proposed = {(r["path"].replace("~", str(isolated_user), 1), r["kind"]) for r in data["proposed"]["paths"]}
    common = repo / ".git"
    assert proposed == {
        (str(pkg / "index.js"), "file"),
        (str(pkg / "package.json"), "file"),
        (str(tree / "tsconfig.base.json"), "file"),
        (str(tree / ".gitignore"), "file"),
        (str(isolated_user / ".gitconfig"), "file"),
        (str(tree / ".git"), "file"),  # the worktree's pointer
        (str(common / "worktrees" / tree.name), "directory"),  # its admin directory
        (str(common / "config"), "file"),
        (str(common / "info" / "exclude"), "file"),
        (str(common / "objects"), "directory"),
        (str(common / "refs"), "directory"),
    }
    groups = {r["path"]: r["group"] for r in data["proposed"]["paths"]}
    assert groups[str(pkg / "index.js")] == "store" and groups[str(common / "objects")] == "git"
    assert data["refused"] == [{"path": str(tree / ".env"), "reason": "credential file (by name)"}]
    assert not any(".env" in r["path"] for r in data["proposed"]["paths"])
    quiet = {q["path"]: q for q in data["quiet_failures"]}
    assert quiet[str(tree / ".env")]["status"] == "refused"
    assert quiet[str(tree / "tsconfig.base.json")]["status"] == "proposed"
    assert all(o["group"] in ("store", "config", "git", "system") for o in data["outside"])

    # The grants, in the user file, make `rootguard run` pass the same command; .env stays invisible.
    user_file = Path(data["user_file"])
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("version = 2\n" + data["snippet"])
    command = "node build.js && git status --short -- . && ! cat ../../.env"
    run = subprocess.run([*ROOTGUARD, "run", "--root", str(root), "--", "sh", "-c", command], capture_output=True,
                         text=True, timeout=300, cwd=str(root),
                         env=env_for(isolated_user, GIT_DISCOVERY_ACROSS_FILESYSTEM="1"))
    assert run.returncode == 0, run.stderr
    assert "build ok, strict=true no .env" in run.stdout
    assert "?? build.js" in run.stdout
    assert "No such file or directory" in run.stderr  # cat ../../.env

    # Without the grants the same command fails in the sandbox (git finds no repository).
    user_file.write_text("version = 2\n")
    bare = subprocess.run([*ROOTGUARD, "run", "--root", str(root), "--", "sh", "-c", command], capture_output=True,
                          text=True, timeout=300, cwd=str(root),
                          env=env_for(isolated_user, GIT_DISCOVERY_ACROSS_FILESYSTEM="1"))
    assert bare.returncode != 0


@NEEDS
def test_enforced_rounds_find_the_same_files(mono, isolated_user):
    root = mono["root"]
    command = ("sh", "-c", "node build.js && git status --short -- .")
    user_file = isolated_user / ".config" / "rootguard" / "config.toml"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text('version = 2\n[workspace]\ngit = "read"\n')  # git inside run (issue 32 point 1)
    code, one, err = trace(root, *command, home=isolated_user)
    assert code == 0, err
    result = subprocess.run([*ROOTGUARD, "trace", "--json", "--enforced", "--root", str(root), "--", *command],
                            capture_output=True, text=True, timeout=600, cwd=str(root),
                            env=env_for(isolated_user, GIT_DISCOVERY_ACROSS_FILESYSTEM="1"))
    assert result.returncode == 0, result.stderr
    enforced = json.loads(result.stdout)
    assert enforced["mode"] == "enforced" and enforced["rounds"] >= 2  # each round uncovers the next lookups
    assert "round 1: exit" in result.stderr
    assert enforced["exit_code"] == 0, result.stderr  # the last round ran with every grant
    paths = lambda data: {(r["path"], r["kind"]) for r in data["proposed"]["paths"]}  # noqa: E731
    # the same set, but for the worktree's .git pointer: under run git is told GIT_DIR and never reads it
    assert paths(enforced) == paths(one) - {(str(mono["tree"] / ".git"), "file")}
    assert [r["path"] for r in enforced["refused"]] == [str(mono["tree"] / ".env")]


@NEEDS
def test_prettierrc_above_the_root_is_a_quiet_failure(mono, isolated_user):
    root, tree = mono["root"], mono["tree"]
    code, data, err = trace(root, "node", "fmt.js", home=isolated_user)
    assert code == 0, err
    assert f"config {tree / '.prettierrc'}" in err
    quiet = {q["path"]: q for q in data["quiet_failures"]}
    assert quiet[str(tree / ".prettierrc")]["name"] == ".prettierrc*"
    text = subprocess.run([*ROOTGUARD, "trace", "--root", str(root), "--", "node", "fmt.js"], capture_output=True,
                          text=True, timeout=300, env=env_for(isolated_user), cwd=str(root))
    assert "Quiet failures" in text.stdout and str(tree / ".prettierrc") in text.stdout


@NEEDS
def test_exit_125_when_ptrace_is_not_allowed(mono, isolated_user):
    # Under an outer strace -f, the inner strace cannot attach: ptrace is refused.
    result = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, *ROOTGUARD, "trace", "--root",
                             str(mono["root"]), "--", "true"], capture_output=True, text=True, timeout=300,
                            env=env_for(isolated_user))
    assert result.returncode == 125, result.stderr
    assert "ptrace is not allowed" in result.stderr and "Traceback" not in result.stderr


def test_trace_bad_input(tmp_path):
    result = subprocess.run([*ROOTGUARD, "trace", "--", "true"], capture_output=True, text=True, timeout=60,
                            env=env_for(tmp_path))
    assert result.returncode == 2 and "--root" in result.stderr
    result = subprocess.run([*ROOTGUARD, "trace", "--root", str(tmp_path), "--", "no-such-command-xyz"],
                            capture_output=True, text=True, timeout=60, env=env_for(tmp_path))
    assert result.returncode == 2 and "command not found" in result.stderr


def test_strace_lines_joined_and_bubblewrap_filtered():
    lines = [
        '10 execve("/usr/bin/bwrap", ["bwrap"], 0x1 /* 3 vars */) = 0',
        '11 newfstatat(AT_FDCWD</w>, "/oldroot/", {st_mode=S_IFDIR|0755}, 0) = 0',
        '11 execve("/usr/bin/node", ["node"], 0x2 /* 3 vars */) = 0',
        '11 openat(AT_FDCWD</w/app>, "../tsconfig.base.json", O_RDONLY <unfinished ...>',
        '12 newfstatat(AT_FDCWD</w/app>, "../.prettierrc", 0x7ff, 0) = -1 ENOENT (No such file or directory)',
        '11 <... openat resumed>) = 3</w/tsconfig.base.json>',
        '10 openat(AT_FDCWD</>, "/proc/self/fd", O_RDONLY|O_DIRECTORY) = 4</proc/10/fd>',
        '12 openat(3</w/store>, "pkg/index.js", O_RDONLY|O_CLOEXEC) = 5</w/store/pkg/index.js>',
        '12 openat(AT_FDCWD</w/app>, "dist/out.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 6</w/app/dist/out.txt>',
    ]
    events = skip_until_exec(parse_lines(lines, "/w/app"), "/usr/bin/node")
    got = [(e.path, e.op, e.ok) for e in events]
    assert got == [
        ("/usr/bin/node", "exec", True),
        ("/w/.prettierrc", "stat", False),
        ("/w/tsconfig.base.json", "read", True),  # when the call completed
        ("/w/store/pkg/index.js", "read", True),
        ("/w/app/dist/out.txt", "write", True),
    ]


@NEEDS
def test_a_deny_rule_is_never_proposed_and_bad_config_is_exit_2(mono, isolated_user):
    root, tree = mono["root"], mono["tree"]
    user_file = isolated_user / ".config" / "rootguard" / "config.toml"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(f'version = 2\n[[paths]]\nid = "no-base"\npath = "{tree / "tsconfig.base.json"}"\n'
                         'policies = { read = "deny", write = "deny" }\n')
    code, data, err = trace(root, "cat", "../../tsconfig.base.json", "../../turbo.json", home=isolated_user)
    assert code == 0, err
    assert [r["path"] for r in data["proposed"]["paths"]] == [str(tree / "turbo.json")]
    refused = {r["path"]: r["reason"] for r in data["refused"]}
    assert refused[str(tree / "tsconfig.base.json")].startswith("deny rule 'no-base'")

    user_file.write_text('version = 2\n[[paths]\nid = "broken"\n')
    code, data, err = trace(root, "true", home=isolated_user)
    assert code == 2 and f"{user_file}:2:" in err and "Traceback" not in err
