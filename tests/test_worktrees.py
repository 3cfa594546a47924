"""Native worktree discovery on real repositories made by git in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lsp_bridge.core import worktrees
from lsp_bridge.core.worktrees import (
    locate,
    sibling_checkouts,
    sibling_worktrees,
)

SECRET = "hunter2-not-a-path"


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Root Guard Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Root Guard Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@pytest.fixture(autouse=True)
def git_env(monkeypatch, tmp_path: Path) -> Path:
    """No GIT_DIR-like variables; a fake HOME of this test's own."""
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
                 "GIT_CEILING_DIRECTORIES", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def git(cwd: Path, *args: str) -> str:
    """Run git with a fixed identity and no user or system configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd, env=env, check=True, capture_output=True, text=True, timeout=120,
    )
    return done.stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    return path


def add_worktree(repo: Path, path: Path) -> Path:
    git(repo, "worktree", "add", "-q", "-b", path.name, str(path))
    return path


def porcelain_paths(repo: Path) -> dict[str, str]:
    """``git worktree list --porcelain``: path -> the flags git prints for it."""
    out: dict[str, str] = {}
    for block in git(repo, "worktree", "list", "--porcelain").strip().split("\n\n"):
        lines = block.splitlines()
        out[lines[0].removeprefix("worktree ")] = " ".join(lines[1:])
    return out


def write_gitfile(folder: Path, content: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / ".git"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content)
    return target


def build_project(base: Path) -> dict[str, Path]:
    """A repository with three linked worktrees beside it."""
    repo = make_repo(base / "app")
    trees = {name: add_worktree(repo, base / name) for name in ("wt-a", "wt-b", "wt-c")}
    return {"repo": repo, **trees}


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    """A project this test may change."""
    return build_project(tmp_path / "src")


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> dict[str, Path]:
    """A project tests only read (built once: git is slow to run many times)."""
    return build_project(tmp_path_factory.mktemp("shared") / "src")


# --- ordinary layouts -------------------------------------------------------------


def test_main_checkout_lists_every_linked_worktree_like_git(shared):
    repo = shared["repo"]
    found = locate(str(repo))
    assert found.status == "found" and not found.diagnostics
    loc = found.location
    assert (loc.kind, loc.toplevel, loc.main_worktree) == ("main", str(repo), str(repo))
    assert loc.git_dir == loc.common_dir == str(repo / ".git")
    assert [w.name for w in loc.worktrees] == ["wt-a", "wt-b", "wt-c"]
    assert {w.admin_dir for w in loc.worktrees} == {str(repo / ".git" / "worktrees" / n) for n in ("wt-a", "wt-b", "wt-c")}
    assert sorted(sibling_worktrees(loc)) == sorted(str(shared[n]) for n in ("wt-a", "wt-b", "wt-c"))
    assert set(porcelain_paths(repo)) == {str(repo), *sibling_worktrees(loc)}


def test_from_deep_inside_a_linked_worktree(shared):
    deep = shared["wt-b"] / "pkg" / "deep"
    deep.mkdir(parents=True, exist_ok=True)
    loc = locate(str(deep)).location
    assert loc.folder == str(deep)
    assert (loc.kind, loc.toplevel) == ("linked", str(shared["wt-b"]))
    assert loc.git_dir == str(shared["repo"] / ".git" / "worktrees" / "wt-b")
    assert loc.common_dir == str(shared["repo"] / ".git")
    assert loc.main_worktree == str(shared["repo"])
    assert str(shared["wt-b"]) in [w.path for w in loc.worktrees]  # all linked ones, own included
    assert sibling_worktrees(loc) == [str(shared["repo"]), str(shared["wt-a"]), str(shared["wt-c"])]
    first = sibling_checkouts(loc)[0]
    assert first.is_main and first.path == str(shared["repo"]) and first.admin_dir == loc.common_dir


def test_symlinked_folder_is_reported_canonically(shared, tmp_path):
    link = tmp_path / "shortcut"
    link.symlink_to(shared["wt-a"])
    loc = locate(str(link)).location
    assert loc.folder == loc.toplevel == str(shared["wt-a"])


def test_locked_worktree_keeps_its_reason_and_stays_a_sibling(project):
    git(project["repo"], "worktree", "lock", "--reason", "on the usb disk", str(project["wt-a"]))
    git(project["repo"], "worktree", "lock", str(project["wt-c"]))
    loc = locate(str(project["repo"])).location
    by_name = {w.name: w for w in loc.worktrees}
    assert (by_name["wt-a"].locked, by_name["wt-a"].lock_reason) == (True, "on the usb disk")
    assert (by_name["wt-c"].locked, by_name["wt-c"].lock_reason) == (True, None)
    assert not by_name["wt-b"].locked
    assert str(project["wt-a"]) in sibling_worktrees(loc)
    assert "locked on the usb disk" in porcelain_paths(project["repo"])[str(project["wt-a"])]


def test_removed_worktree_is_prunable_and_never_a_sibling(project):
    subprocess.run(["rm", "-rf", str(project["wt-b"])], check=True, timeout=120)
    loc = locate(str(project["wt-a"])).location
    gone = next(w for w in loc.worktrees if w.name == "wt-b")
    assert gone.prunable and gone.missing and not gone.locked
    assert gone.prune_reason == "gitdir file points to non-existent location"
    assert gone.path == str(project["wt-b"])
    assert str(project["wt-b"]) not in sibling_worktrees(loc)
    assert sibling_worktrees(loc) == [str(project["repo"]), str(project["wt-c"])]
    assert "prunable" in porcelain_paths(project["repo"])[str(project["wt-b"])]


def test_locked_worktree_whose_directory_is_gone_is_not_a_sibling(project):
    git(project["repo"], "worktree", "lock", "--reason", "offline", str(project["wt-c"]))
    subprocess.run(["rm", "-rf", str(project["wt-c"])], check=True, timeout=120)
    entry = next(w for w in locate(str(project["repo"])).location.worktrees if w.name == "wt-c")
    assert (entry.locked, entry.missing, entry.prunable) == (True, True, False)
    assert str(project["wt-c"]) not in sibling_worktrees(locate(str(project["repo"])).location)


def test_relative_gitdir_forms_of_git_2_48(project):
    """Admin ``gitdir`` relative to the admin dir, ``.git`` file relative to the worktree."""
    repo, tree = project["repo"], project["wt-b"]
    admin = repo / ".git" / "worktrees" / "wt-b"
    (admin / "gitdir").write_text(os.path.relpath(tree / ".git", admin) + "\n")
    (tree / ".git").write_text("gitdir: " + os.path.relpath(admin, tree) + "\n")
    loc = locate(str(tree / ".")).location
    assert (loc.kind, loc.toplevel, loc.git_dir) == ("linked", str(tree), str(admin))
    assert sibling_worktrees(loc) == [str(repo), str(project["wt-a"]), str(project["wt-c"])]
    assert str(tree) in sibling_worktrees(locate(str(repo)).location)


def test_submodule_is_its_own_repository_not_a_worktree(tmp_path):
    library = make_repo(tmp_path / "library")
    superproject = make_repo(tmp_path / "super")
    git(superproject, "submodule", "add", "-q", str(library), "vendor/lib")
    git(superproject, "commit", "-q", "-m", "add submodule")
    tree = add_worktree(superproject, tmp_path / "super-wt")

    inside = locate(str(superproject / "vendor" / "lib")).location
    modules = superproject / ".git" / "modules" / "vendor" / "lib"
    assert (inside.kind, inside.toplevel) == ("submodule", str(superproject / "vendor" / "lib"))
    assert inside.git_dir == inside.common_dir == str(modules)
    assert inside.main_worktree == inside.toplevel
    assert inside.worktrees == () and sibling_worktrees(inside) == []
    common = git(superproject / "vendor" / "lib", "rev-parse", "--path-format=absolute", "--git-common-dir")
    assert common.strip() == inside.common_dir

    outer = locate(str(superproject)).location
    assert outer.kind == "main"
    assert sibling_worktrees(outer) == [str(tree)]
    assert all("vendor" not in w.path for w in outer.worktrees)


def test_bare_repository_with_linked_worktrees(tmp_path):
    origin = make_repo(tmp_path / "origin")
    bare = tmp_path / "repo.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    one = tmp_path / "one"
    two = tmp_path / "two"
    git(bare, "worktree", "add", "-q", str(one))
    git(bare, "worktree", "add", "-q", "-b", "two", str(two))

    hub = locate(str(bare / "refs")).location
    assert (hub.kind, hub.toplevel, hub.main_worktree) == ("bare", None, None)
    assert hub.common_dir == hub.git_dir == str(bare)
    assert sorted(sibling_worktrees(hub)) == [str(one), str(two)]

    linked = locate(str(one)).location
    assert (linked.kind, linked.toplevel, linked.main_worktree) == ("linked", str(one), None)
    assert sibling_worktrees(linked) == [str(two)]


def test_bare_hub_with_dot_bare_and_gitdir_file(tmp_path):
    origin = make_repo(tmp_path / "origin")
    hub = tmp_path / "hub"
    hub.mkdir()
    git(hub, "clone", "-q", "--bare", str(origin), ".bare")
    write_gitfile(hub, "gitdir: ./.bare\n")
    git(hub, "worktree", "add", "-q", "main")
    git(hub, "worktree", "add", "-q", "-b", "feature", "feature")

    at_hub = locate(str(hub)).location
    assert (at_hub.kind, at_hub.toplevel) == ("bare", None)
    assert at_hub.common_dir == str(hub / ".bare")
    assert sibling_worktrees(at_hub) == [str(hub / "feature"), str(hub / "main")]

    in_main = locate(str(hub / "main")).location
    assert (in_main.kind, in_main.toplevel, in_main.common_dir) == ("linked", str(hub / "main"), str(hub / ".bare"))
    assert sibling_worktrees(in_main) == [str(hub / "feature")]


# --- wide checkouts -------------------------------------------------------------


def test_repository_at_home_is_reported_with_a_warning(git_env):
    make_repo(git_env)
    (git_env / "projects" / "x").mkdir(parents=True)
    found = locate(str(git_env / "projects" / "x"))
    assert found.status == "found" and found.location.toplevel == str(git_env)
    wide = [d for d in found.diagnostics if d.code == "git.wide-checkout"]
    assert len(wide) == 1 and wide[0].severity == "warning" and "home directory" in wide[0].message


def test_home_main_worktree_is_never_added_as_a_sibling(git_env, tmp_path):
    make_repo(git_env)
    tree = add_worktree(git_env, tmp_path / "dotfiles-wt")
    found = locate(str(tree))
    assert found.location.main_worktree == str(git_env)
    assert sibling_worktrees(found.location) == []
    assert any(d.code == "git.wide-checkout" for d in found.diagnostics)


# --- nothing there, bad input ----------------------------------------------------


def test_no_repository_above_the_folder(tmp_path):
    (tmp_path / "plain" / "dir").mkdir(parents=True)
    found = locate(str(tmp_path / "plain" / "dir"))
    assert (found.status, found.location, found.diagnostics) == ("none", None, ())


def test_relative_folder_is_a_value_error():
    with pytest.raises(ValueError, match="not an absolute path"):
        locate("src/app")


def test_missing_folder_is_reported_not_raised(tmp_path):
    found = locate(str(tmp_path / "nowhere"))
    assert found.status == "none" and found.diagnostics[0].code == "git.not-a-directory"


# --- hostile .git entries ------------------------------------------------------------


def hostile(project, folder, tmp_path, git_env) -> dict[str, object]:
    """Ways to write ``.git``, each placed inside a real repository's checkout."""
    admin_a = project["repo"] / ".git" / "worktrees" / "wt-a"
    return {
        "root": "gitdir: /\n",
        "home": f"gitdir: {git_env}\n",
        "home-relative": "gitdir: " + os.path.relpath(git_env, folder) + "\n",
        "other-worktree-admin": f"gitdir: {admin_a}\n",
        "other-repository": f"gitdir: {project['repo'] / '.git'}\n",
        "missing": f"gitdir: {tmp_path / 'no-such-dir'}\n",
        "garbage": f"{SECRET} is not a gitdir line\n",
        "binary": bytes(range(256)) * 4,
        "empty": "",
        "two-lines": f"gitdir: {admin_a}\ngitdir: /\n",
        "huge": "gitdir: " + "a/" * 5000 + "\n",
        "nul": f"gitdir: {admin_a}\x00{SECRET}\n",
        "plain-dir": f"gitdir: {folder.parent}\n",
    }


HOSTILE = {
    "root": "git.gitdir-implausible",
    "home": "git.gitdir-implausible",
    "home-relative": "git.gitdir-implausible",
    "other-worktree-admin": "git.no-backlink",
    "other-repository": "git.no-backlink",
    "missing": "git.gitdir-missing",
    "garbage": "git.gitfile-invalid",
    "binary": "git.gitfile-invalid",
    "empty": "git.gitfile-invalid",
    "two-lines": "git.gitfile-invalid",
    "huge": "git.gitfile-invalid",
    "nul": "git.gitfile-invalid",
    "plain-dir": "git.gitdir-implausible",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_gitfile_is_refused_and_widens_nothing(case, shared, tmp_path, git_env):
    folder = shared["repo"] / "vendor" / case
    dot_git = write_gitfile(folder, hostile(shared, folder, tmp_path, git_env)[case])
    found = locate(str(folder / "."))
    assert (found.status, found.location) == ("refused", None)
    [error] = found.diagnostics
    assert (error.severity, error.code, error.file) == ("error", HOSTILE[case], str(dot_git))
    assert SECRET not in error.message  # names the file, never echoes its content


def test_dot_git_symlink_is_refused(shared, tmp_path, git_env):
    for name, target in (("to-root", "/"), ("to-home", git_env), ("to-repo", shared["repo"] / ".git")):
        folder = tmp_path / "links" / name
        folder.mkdir(parents=True)
        (folder / ".git").symlink_to(target)
        found = locate(str(folder))
        assert (found.status, found.location) == ("refused", None)
        assert found.diagnostics[0].code == "git.gitfile-symlink"


def test_fifo_named_dot_git_is_refused_without_blocking(tmp_path):
    folder = tmp_path / "fifo"
    folder.mkdir()
    os.mkfifo(folder / ".git")
    found = locate(str(folder))
    assert found.status == "refused" and found.diagnostics[0].code == "git.gitfile-invalid"


def test_moved_worktree_without_back_link_is_refused(project, tmp_path):
    moved = tmp_path / "moved"
    project["wt-a"].rename(moved)  # the admin dir still names the old place
    found = locate(str(moved))
    assert (found.status, found.diagnostics[0].code) == ("refused", "git.no-backlink")
    assert "git worktree repair" in found.diagnostics[0].message


def test_module_dir_whose_core_worktree_points_elsewhere_is_refused(tmp_path):
    library = make_repo(tmp_path / "library")
    superproject = make_repo(tmp_path / "super")
    git(superproject, "submodule", "add", "-q", str(library), "lib")
    impostor = write_gitfile(tmp_path / "impostor", f"gitdir: {superproject / '.git' / 'modules' / 'lib'}\n")
    found = locate(str(impostor.parent))
    assert (found.status, found.diagnostics[0].code) == ("refused", "git.no-backlink")


def test_forged_repository_cannot_list_a_victim_as_its_worktree(tmp_path):
    """A self-consistent fake repo whose other entries name checkouts it does not own."""
    victim = make_repo(tmp_path / "victim")
    victim_tree = add_worktree(victim, tmp_path / "victim-wt")
    folder = tmp_path / "attacker"
    fake = folder / "fake"
    for sub in ("objects", "refs", "worktrees/me", "worktrees/v1", "worktrees/v2"):
        (fake / sub).mkdir(parents=True)
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    (fake / "config").write_text(f"[core]\n\tbare = false\n\tworktree = {victim}\n")
    me = fake / "worktrees" / "me"
    (me / "HEAD").write_text("ref: refs/heads/main\n")
    (me / "commondir").write_text("../..\n")
    (me / "gitdir").write_text(f"{folder / '.git'}\n")
    (fake / "worktrees" / "v1" / "gitdir").write_text(f"{victim / '.git'}\n")
    (fake / "worktrees" / "v2" / "gitdir").write_text(f"{victim_tree / '.git'}\n")
    write_gitfile(folder, f"gitdir: {me}\n")

    found = locate(str(folder))
    assert found.status == "found" and found.location.kind == "linked"
    assert found.location.main_worktree is None
    assert [w.name for w in found.location.worktrees] == ["me"]
    assert sibling_worktrees(found.location) == []
    codes = sorted(d.code for d in found.diagnostics)
    assert codes == ["git.no-backlink", "git.worktree-mismatch", "git.worktree-mismatch"]


def test_worktree_whose_dot_git_points_at_another_admin_is_left_out(project):
    other_admin = project["repo"] / ".git" / "worktrees" / "wt-a"
    (project["wt-c"] / ".git").write_text(f"gitdir: {other_admin}\n")
    found = locate(str(project["repo"]))
    assert [w.name for w in found.location.worktrees] == ["wt-a", "wt-b"]
    assert [d.code for d in found.diagnostics] == ["git.worktree-mismatch"]
    assert str(project["wt-c"]) not in sibling_worktrees(found.location)


# --- the hot path runs no process; the fallback does, and stays narrow ----------------


@pytest.fixture
def no_processes(monkeypatch):
    monkeypatch.setenv("PATH", "")

    def refuse(*args, **kwargs):
        raise AssertionError("a subprocess was started on the hot path")

    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_native_discovery_starts_no_process(shared, tmp_path, no_processes):
    for folder in (shared["repo"], shared["wt-c"]):
        found = locate(str(folder))
        assert found.status == "found" and len(sibling_worktrees(found.location)) == 3


def unknown_layout(project, tmp_path) -> Path:
    """A linked worktree whose admin dir git accepts but that is not <common>/worktrees/<name>."""
    tree = project["wt-b"]
    admin = tmp_path / "elsewhere" / "admin-wt-b"
    admin.parent.mkdir()
    (project["repo"] / ".git" / "worktrees" / "wt-b").rename(admin)
    (admin / "commondir").write_text(f"{project['repo'] / '.git'}\n")
    (tree / ".git").write_text(f"gitdir: {admin}\n")
    return tree


def test_unknown_layout_is_undecided_natively(project, tmp_path, no_processes):
    tree = unknown_layout(project, tmp_path)
    found = locate(str(tree))
    assert (found.status, found.location) == ("undecided", None)
    assert found.diagnostics[0].code == "git.unknown-layout"


def test_an_undecided_folder_adds_no_root(project, tmp_path):
    """Native discovery cannot decide, and git is never asked instead: the scope adds nothing."""
    from lsp_bridge.core.scope import build_scope
    from lsp_bridge.core.settings import Config

    tree = unknown_layout(project, tmp_path)
    scope = build_scope([str(tree)], Config())
    assert scope.union.paths == (str(tree),) and scope.worktrees == ()
    assert "git.unknown-layout" in [d.code for d in scope.diagnostics]


def test_an_empty_dot_git_directory_is_undecided(tmp_path):
    folder = tmp_path / "half-made"
    (folder / ".git").mkdir(parents=True)
    assert locate(str(folder)).status == "undecided"


# --- every change is seen -----------------------------------------------------------
#
# locate() reads the files on every call (nothing is cached: the answer decides which
# checkouts become roots). Each change below is made right after a first locate(), and
# the next locate() must see it.


def settle(folder: Path) -> worktrees.Discovery:
    """``locate`` twice: the same answer for the same files."""
    first = locate(str(folder))
    assert locate(str(folder)) == first
    return first


def rewrite_in_place(path: Path, text: str) -> None:
    """Overwrite ``path`` without replacing it (same inode), as ``echo x >`` would."""
    with open(path, "r+") as handle:
        handle.truncate(0)
        handle.write(text)


def states(found: worktrees.Discovery) -> dict[str, tuple]:
    return {w.name: (w.path, w.locked, w.lock_reason, w.missing, w.prunable) for w in found.location.worktrees}


def test_nothing_is_kept_between_calls():
    """No cache that could decide: the module has no state to clear or count."""
    assert not hasattr(worktrees, "clear_cache") and not hasattr(worktrees, "cache_info")


def test_git_worktree_commands_are_followed(project, tmp_path):
    repo = project["repo"]
    settle(repo)
    added = add_worktree(repo, tmp_path / "src" / "wt-d")
    assert str(added) in sibling_worktrees(locate(str(repo)).location)

    settle(repo)
    git(repo, "worktree", "lock", "--reason", "usb", str(project["wt-a"]))
    assert states(locate(str(repo)))["wt-a"][1:3] == (True, "usb")

    settle(repo)
    rewrite_in_place(repo / ".git" / "worktrees" / "wt-a" / "locked", "ssd")  # same size
    assert states(locate(str(repo)))["wt-a"][1:3] == (True, "ssd")

    settle(repo)
    git(repo, "worktree", "unlock", str(project["wt-a"]))
    assert states(locate(str(repo)))["wt-a"][1:3] == (False, None)

    settle(repo)
    git(repo, "worktree", "move", str(project["wt-b"]), str(tmp_path / "src" / "wt-z"))
    found = locate(str(repo))
    assert states(found)["wt-b"][0] == str(tmp_path / "src" / "wt-z")
    assert str(project["wt-b"]) not in sibling_worktrees(found.location)

    settle(repo)
    git(repo, "worktree", "remove", str(project["wt-c"]))
    assert "wt-c" not in states(locate(str(repo)))

    settle(repo)
    subprocess.run(["rm", "-rf", str(added)], check=True, timeout=120)
    found = locate(str(repo))
    assert states(found)["wt-d"][3:] == (True, True)
    assert str(added) not in sibling_worktrees(found.location)


def test_in_place_gitdir_rewrite_of_the_same_size_is_seen(project):
    """The admin dir now names another directory: the old checkout has no back-link any more."""
    repo, tree = project["repo"], project["wt-b"]
    decoy = tree.parent / "wt-x"  # same length as wt-b
    write_gitfile(decoy, f"gitdir: {repo / '.git' / 'worktrees' / 'wt-b'}\n")
    gitdir = repo / ".git" / "worktrees" / "wt-b" / "gitdir"
    settle(repo)
    before = gitdir.stat()
    rewrite_in_place(gitdir, f"{decoy / '.git'}\n")
    assert (gitdir.stat().st_ino, gitdir.stat().st_size) == (before.st_ino, before.st_size)
    found = locate(str(repo))
    assert states(found)["wt-b"][0] == str(decoy)
    assert str(tree) not in sibling_worktrees(found.location)
    refused = locate(str(tree))  # the old checkout's .git no longer has a back-link
    assert (refused.status, refused.diagnostics[0].code) == ("refused", "git.no-backlink")


@pytest.mark.parametrize("target", ["home-repository", "victim-repository", "plain-home"])
def test_hostile_gitdir_rewrite_is_refused_on_the_next_call(project, tmp_path, git_env, target):
    """A valid entry whose gitdir is then pointed at a directory that is no checkout of it."""
    victim = {
        "home-repository": lambda: make_repo(git_env),
        "victim-repository": lambda: make_repo(tmp_path / "victim"),
        "plain-home": lambda: git_env,
    }[target]()
    gitdir = project["repo"] / ".git" / "worktrees" / "wt-a" / "gitdir"
    settle(project["repo"])
    rewrite_in_place(gitdir, f"{victim / '.git'}\n")
    found = locate(str(project["repo"]))
    siblings = sibling_worktrees(found.location)
    assert str(victim) not in siblings and str(project["wt-a"]) not in siblings
    if target == "plain-home":  # nothing there: a missing, prunable entry
        assert states(found)["wt-a"] == (str(victim), False, None, True, True)
    else:  # its .git is a directory, not a back-link
        assert "wt-a" not in states(found)
        assert "git.worktree-mismatch" in [d.code for d in found.diagnostics]


def test_in_place_dot_git_rewrite_is_seen(project):
    """wt-c's .git now names wt-a's admin dir (same size): left out, and refused from inside."""
    dot_git = project["wt-c"] / ".git"
    settle(project["repo"])
    settle(project["wt-c"])
    rewrite_in_place(dot_git, dot_git.read_text().replace("wt-c", "wt-a"))
    found = locate(str(project["repo"]))
    assert "wt-c" not in states(found) and str(project["wt-c"]) not in sibling_worktrees(found.location)
    assert [d.code for d in found.diagnostics] == ["git.worktree-mismatch"]
    inside = locate(str(project["wt-c"]))
    assert (inside.status, inside.diagnostics[0].code) == ("refused", "git.no-backlink")


def test_symbolic_link_swaps_on_the_worktree_path_are_seen(tmp_path):
    repo = make_repo(tmp_path / "app")
    trees = tmp_path / "trees"
    tree = add_worktree(repo, trees / "wt-a")
    settle(repo)
    (tmp_path / "moved").mkdir()
    trees.rename(tmp_path / "moved" / "trees")  # a parent becomes a link elsewhere
    trees.symlink_to(tmp_path / "moved" / "trees")
    found = locate(str(repo))
    assert states(found)["wt-a"][0] == str(tmp_path / "moved" / "trees" / "wt-a")

    settle(repo)
    real = tmp_path / "moved" / "trees"
    (real / "wt-a").rename(real / "wt-a-real")  # the worktree itself becomes a link
    (real / "wt-a").symlink_to(real / "wt-a-real")
    found = locate(str(repo))
    assert states(found)["wt-a"][0] == str(real / "wt-a-real")
    assert str(tree) not in sibling_worktrees(found.location)
