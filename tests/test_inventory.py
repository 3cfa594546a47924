"""The widening inventory (seed 000) on a real pnpm-style monorepo with git history."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.cli.demo_repo import DELETED_SECRET, DEPLOY_ROLE, build_monorepo
from lsp_bridge.inventory.scan import InventoryCache, inventory
from lsp_bridge.inventory.secrets import (
    CREDENTIAL_NAME_HINT,
    count_credentials,
    is_credential_name,
)
from tests.conftest import tmp_keeps_scans


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The default demo: 30 packages, checkout with 340 files, 12 commits, a worktree."""
    return build_monorepo(str(tmp_path_factory.mktemp("demo")))


@pytest.fixture
def small(tmp_path):
    """A small demo for tests that change files."""
    return build_monorepo(str(tmp_path), packages=4, files_per_package=6, narrow_files=10,
                          commits=4, worktree=False)


def regular_files(top: str, skip: tuple[str, ...] = ()) -> int:
    """What ``find top -type f`` counts, minus .git directories and the ``skip`` dirs."""
    count = 0
    for path, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git" and os.path.join(path, d) not in skip]
        count += sum(1 for f in files
                     if f != ".git" and not os.path.islink(os.path.join(path, f)))
    return count


def everything_shown(report) -> str:
    return json.dumps(report.to_json()) + "\n".join(report.describe()) + report.summary_line()


# ---------------------------------------------------------------- the demo repository


def test_demo_links_resolve_into_the_store_and_the_sibling(demo):
    assert os.readlink(demo.react_link) == "../../../node_modules/.pnpm/react@18.3.1/node_modules/react"
    assert os.path.realpath(demo.react_link) == os.path.join(
        demo.store, "react@18.3.1", "node_modules", "react")
    assert os.path.realpath(demo.ui_link) == demo.package("ui")
    tsconfig = Path(demo.narrow, "tsconfig.json").read_text()
    assert '"extends": "../../tsconfig.base.json"' in tsconfig
    assert Path(demo.repo, "tsconfig.base.json").is_file()
    assert len(Path(demo.env_file).read_text().splitlines()) == 11


def test_narrow_root_reads_the_package_files_only(demo):
    report = inventory([], [demo.narrow])
    assert report.files_after == 340 == regular_files(demo.narrow)
    # packages/checkout/node_modules holds links only: nothing counted, no store line.
    assert all(os.path.islink(os.path.join(demo.narrow, "node_modules", n))
               for n in ("react", "zod"))
    assert report.stores == ()
    assert report.credentials == () and report.git == ()


# ---------------------------------------------------------------- adding the repository root


@pytest.fixture(scope="module")
def widened(demo):
    return inventory([demo.narrow], [demo.repo])


def test_adding_the_repository_root_multiplies_the_readable_files(demo, widened):
    assert widened.widens
    assert widened.added_roots == (demo.repo,)
    assert widened.files_before == 340
    expected = regular_files(demo.repo, skip=(demo.store,))
    assert widened.files_after == expected
    assert 3000 < widened.files_after < 4000
    assert widened.ratio == round(expected / 340, 1)
    data = widened.to_json()
    assert data["widens"] is True and data["ratio"] == widened.ratio
    assert data["files_before"] == 340 and data["files_after"] == expected


def test_credential_files_are_counted_per_credential(demo, widened):
    found = {c.path: c.count for c in widened.credentials}
    assert found == {demo.env_file: 4, demo.tfvars: 6}  # .npmrc has no token: not listed
    assert count_credentials(demo.env_file) == 4
    assert count_credentials(demo.tfvars) == 6


def test_git_directory_is_reported_with_history_and_the_deleted_secret(demo, widened):
    (git,) = widened.git
    assert git.path == os.path.join(demo.repo, ".git")
    assert git.commits == demo.commits == 12
    assert git.deleted_sensitive == (DELETED_SECRET,)
    assert not os.path.exists(os.path.join(demo.repo, DELETED_SECRET))
    assert git.via == (demo.repo,)
    du = shutil.which("du")
    if du and subprocess.run([du, "-sb", os.devnull], capture_output=True, timeout=120).returncode == 0:
        sizes = subprocess.run([du, "-sb", git.path], capture_output=True, text=True, check=True, timeout=120)
        assert git.bytes == int(sizes.stdout.split()[0])
    else:
        assert git.bytes > 0


def test_siblings_roles_and_stores(demo, widened):
    assert demo.package("payments") in widened.siblings
    assert demo.package("ui") in widened.siblings
    assert len(widened.siblings) == 29  # every package but checkout; not the workspace root
    assert demo.narrow not in widened.siblings and demo.repo not in widened.siblings
    assert [(r.path, r.roles) for r in widened.ci_roles] == [(demo.workflow, (DEPLOY_ROLE,))]
    (store,) = widened.stores
    assert store.path == demo.store
    assert store.files == regular_files(demo.store) > 0


def test_no_secret_value_is_shown(demo, widened):
    shown = everything_shown(widened)
    assert demo.fake_secrets
    for secret in demo.fake_secrets:
        assert secret not in shown


def test_summary_and_description_name_what_is_handed_over(demo, widened):
    summary = widened.summary_line()
    assert summary.startswith(f"×{widened.ratio:g}: +{widened.files_after - 340:,} files")
    assert "2 secrets files" in summary and ".git (12 commits)" in summary
    text = "\n".join(widened.describe())
    assert "340 → " in text and "shop/.env (4)" in text
    assert "shop/infra/terraform/prod.tfvars (6)" in text
    assert DELETED_SECRET in text and DEPLOY_ROLE in text
    assert "29 first-party packages" in text and "node_modules/.pnpm" in text


# ---------------------------------------------------------------- other unions


def test_adding_a_folder_already_inside_does_not_widen(demo):
    report = inventory([demo.repo], [demo.repo, demo.package("ui")])
    assert not report.widens
    assert report.files_before == report.files_after
    assert report.added_roots == () and report.credentials == () and report.git == ()
    assert report.summary_line() == "no widening"


def test_adding_a_disjoint_folder(demo, tmp_path):
    other = tmp_path / "billing"
    other.mkdir()
    (other / "package.json").write_text('{"name": "billing"}\n')
    (other / "index.ts").write_text("export {};\n")
    (other / ".env").write_text("PORT=8080\nBILLING_API_TOKEN=Zx81Qw72Er63Ty54Ui45\n")
    report = inventory([demo.narrow], [demo.narrow, str(other)])
    assert report.widens and report.added_roots == (str(other),)
    assert report.files_after == 340 + 3
    assert [(c.path, c.count) for c in report.credentials] == [(str(other / ".env"), 1)]
    assert report.siblings == (str(other),)
    assert report.git == () and report.stores == ()


def test_linked_worktree_reaches_the_shared_git_directory(demo):
    alone = inventory([demo.narrow], [demo.narrow, demo.worktree])
    (git,) = alone.git
    assert git.path == os.path.join(demo.repo, ".git")
    assert git.via == (demo.worktree,)
    assert git.deleted_sensitive == (DELETED_SECRET,)
    # Next to the repository, the same .git is already exposed: nothing new to report.
    beside = inventory([demo.repo], [demo.repo, demo.worktree])
    assert beside.widens and beside.git == ()
    assert beside.credentials == ()  # .env and prod.tfvars are untracked: not in the worktree
    assert os.path.join(demo.worktree, "packages", "payments") in beside.siblings


def test_relative_and_missing_roots(tmp_path):
    with pytest.raises(ValueError, match="packages/checkout"):
        inventory([], ["packages/checkout"])
    missing = str(tmp_path / "gone")
    report = inventory([], [missing])
    assert report.files_after == 0
    assert any(missing in line for line in report.errors)


# ---------------------------------------------------------------- incremental updates


def test_file_changed_updates_without_rescanning(small):
    cache = InventoryCache()
    first = cache.report([small.narrow], [small.repo])
    scanned = cache.dirs_scanned
    local = os.path.join(small.repo, ".env.local")
    Path(local).write_text("NODE_ENV=development\nAPI_TOKEN=Ab12Cd34Ef56Gh78\n")
    cache.file_changed(local)
    assert cache.dirs_scanned == scanned + 1  # the repository root, listed once
    second = cache.report([small.narrow], [small.repo])
    assert cache.dirs_scanned == scanned + 1
    assert second.files_after == first.files_after + 1
    assert (local, 1) in [(c.path, c.count) for c in second.credentials]

    os.remove(local)
    cache.file_changed(local)
    third = cache.report([small.narrow], [small.repo])
    assert third.files_after == first.files_after
    assert local not in [c.path for c in third.credentials]


def test_file_changed_sees_a_git_directory_become_a_plain_folder_and_back(small):
    """A .git directory that stops being one (its HEAD removed) is a folder the agent reads:
    the live count (the language server's) lists its credential files; git init makes it
    history again."""
    nested = os.path.join(small.repo, "vendor-clone")
    subprocess.run(["git", "init", "-q", nested], check=True, timeout=60)
    cache = InventoryCache()
    first = cache.report([small.narrow], [small.repo])
    git_dir = os.path.join(nested, ".git")
    assert git_dir in [g.path for g in first.git]
    os.remove(os.path.join(git_dir, "HEAD"))
    cache.file_changed(os.path.join(git_dir, "HEAD"))
    secret = os.path.join(git_dir, ".env")
    Path(secret).write_text("GITHUB_TOKEN=ghp_" + "Q" * 36 + "\n")
    cache.file_changed(secret)
    second = cache.report([small.narrow], [small.repo])
    assert (secret, 1) in [(c.path, c.count) for c in second.credentials]
    assert git_dir not in [g.path for g in second.git]
    assert second.files_after == inventory([small.narrow], [small.repo]).files_after

    Path(git_dir, "HEAD").write_text("ref: refs/heads/main\n")
    cache.file_changed(os.path.join(git_dir, "HEAD"))
    third = cache.report([small.narrow], [small.repo])
    assert git_dir in [g.path for g in third.git]
    assert secret not in [c.path for c in third.credentials]
    assert third.files_after == first.files_after


def test_file_changed_sees_new_directories_and_edited_secrets(small):
    cache = InventoryCache()
    first = cache.report([small.narrow], [small.repo])
    package = os.path.join(small.repo, "packages", "billing")
    os.makedirs(os.path.join(package, "src"))
    Path(package, "package.json").write_text("{}\n")
    Path(package, "src", "index.ts").write_text("export {};\n")
    cache.file_changed(package)
    with open(small.env_file, "a") as handle:
        handle.write("REDIS_PASSWORD=Qw12Er34Ty56\n")
    cache.file_changed(small.env_file)
    second = cache.report([small.narrow], [small.repo])
    assert second.files_after == first.files_after + 2
    assert package in second.siblings
    assert {c.path: c.count for c in second.credentials}[small.env_file] == 5
    assert second.files_after == inventory([small.narrow], [small.repo]).files_after

    shutil.rmtree(package)
    cache.file_changed(package)
    assert cache.report([small.narrow], [small.repo]).files_after == first.files_after


def test_a_new_commit_is_seen_in_the_commit_count(small):
    cache = InventoryCache()
    assert cache.report([small.narrow], [small.repo]).git[0].commits == 4
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x")
    subprocess.run(["git", "-C", small.repo, "-c", "commit.gpgsign=false", "commit", "-q",
                    "--allow-empty", "-m", "one more"], env=env, check=True, timeout=120)
    assert cache.report([small.narrow], [small.repo]).git[0].commits == 5


# ---------------------------------------------------------------- git history


def git(repo, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args], env=env,
                   check=True, capture_output=True, timeout=120)


def new_repo(path: Path, commits: int) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for index in range(commits):
        (path / "notes.md").write_text(f"note {index}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"commit {index}")
    return path


def test_every_repository_under_a_new_folder_is_reported(tmp_path):
    first = new_repo(tmp_path / "work" / "api", commits=2)
    second = new_repo(tmp_path / "work" / "libs" / "web", commits=3)
    report = inventory([], [str(tmp_path / "work")])
    assert [(g.path, g.commits, g.deleted_sensitive) for g in report.git] == [
        (str(first / ".git"), 2, ()), (str(second / ".git"), 3, ())]
    assert report.files_after == 2  # the two notes.md; .git directories are not counted


def test_a_credential_file_renamed_away_is_reported_as_still_in_history(tmp_path):
    repo = new_repo(tmp_path / "svc", commits=1)
    (repo / ".env").write_text("DB_PASSWORD=Qw12Er34Ty56Ui78\n")
    git(repo, "add", ".env")
    git(repo, "commit", "-q", "-m", "config")
    git(repo, "mv", ".env", "settings.txt")  # same content: git would call it a rename
    git(repo, "commit", "-q", "-m", "move")
    report = inventory([], [str(repo)])
    (git_dir,) = report.git
    assert git_dir.commits == 3
    assert git_dir.deleted_sensitive == ()  # not deleted: moved
    assert [r.to_json() for r in git_dir.renamed_sensitive] == [
        {"from": ".env", "to": "settings.txt", "in_tree": True, "credential_name": False}]
    assert "renamed away from a credential name (old content in history): .env → settings.txt" in (
        "\n".join(report.describe()))


def test_renames_are_told_apart_from_deletions(tmp_path):
    repo = new_repo(tmp_path / "svc", commits=1)
    (repo / "old.env").write_text("API_TOKEN=Qw12Er34Ty56Ui78\n")
    (repo / "prod.tfvars").write_text('db_password = "Zx98Cv76Bn54"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    git(repo, "mv", "old.env", "new.env")
    git(repo, "rm", "-q", "prod.tfvars")
    git(repo, "commit", "-q", "-m", "move and delete")
    report = inventory([], [str(repo)])
    (git_dir,) = report.git
    assert git_dir.deleted_sensitive == ("prod.tfvars",)
    assert [(r.source, r.dest, r.dest_in_tree) for r in git_dir.renamed_sensitive] == [("old.env", "new.env", True)]
    text = "\n".join(report.describe())
    assert "deleted but still in history: prod.tfvars" in text
    assert "renamed (content kept under the new name): old.env → new.env" in text


def test_a_history_git_cannot_read_is_unknown_not_empty(tmp_path):
    broken = tmp_path / "broken" / ".git"  # looks like a git directory; its HEAD names no object
    for name in ("objects", "refs"):
        (broken / name).mkdir(parents=True)
    (broken / "HEAD").write_text("a" * 40 + "\n")
    report = inventory([], [str(tmp_path / "broken")])
    (git_dir,) = report.git
    assert git_dir.commits is None and git_dir.deleted_sensitive is None
    text = "\n".join(report.describe())
    assert "unknown number of commits" in text and "could not list" in text
    assert report.summary_line().endswith(".git (? commits)")


def test_the_history_is_kept_between_runs_while_no_ref_moves(tmp_path):
    """A second process reads the kept answers (one ``git show-ref``), never after a ref moved."""
    from lsp_bridge.inventory import history

    repo = new_repo(tmp_path / "svc", commits=2)
    (repo / ".env").write_text("API_TOKEN=Qw12Er34Ty56Ui78\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    first = inventory([], [str(repo)]).git[0]
    assert (first.commits, first.deleted_sensitive) == (3, ())
    store = Path(history._store_path())
    common = str(repo / ".git")
    assert json.loads(store.read_text())["repos"][common]["key"] == history.refs_digest(common)
    assert oct(store.stat().st_mode & 0o777) == "0o600"

    # What is kept is what is shown: an entry under the current refs answers for git.
    data = json.loads(store.read_text())
    data["repos"][common]["commits"] = 12345
    store.write_text(json.dumps(data))
    assert inventory([], [str(repo)]).git[0].commits == 12345
    assert InventoryCache(persistent=False).report([], [str(repo)]).git[0].commits == 3

    # A ref moves (a deletion committed): read again, the kept entry replaced.
    git(repo, "rm", "-q", ".env")
    git(repo, "commit", "-q", "-m", "drop the env file")
    again = inventory([], [str(repo)]).git[0]
    assert (again.commits, again.deleted_sensitive) == (4, (".env",))
    assert json.loads(store.read_text())["repos"][common]["commits"] == 4

    # A branch elsewhere (not HEAD's) moving changes the key too: --all reads every ref.
    git(repo, "branch", "side")
    assert history.refs_digest(common) != json.loads(store.read_text())["repos"][common]["key"]
    assert inventory([], [str(repo)]).git[0].commits == 4

    # So does a commit on a linked worktree's detached HEAD, which no ref names.
    linked = tmp_path / "svc-detached"
    git(repo, "worktree", "add", "-q", "--detach", str(linked))
    assert inventory([], [str(repo)]).git[0].commits == 4
    git(linked, "commit", "-q", "--allow-empty", "-m", "detached work")
    assert inventory([], [str(repo)]).git[0].commits == 5


@pytest.mark.skipif(not tmp_keeps_scans(), reason="the temporary directory is not on a local file system: "
                                                  "nothing is kept there")
def test_an_unchanged_repository_needs_no_git_process_the_second_time(tmp_path, monkeypatch):
    """Where the files holding the refs are as kept (``history.refs_stat``), the kept answers
    stand without git; a ref moved by git or edited by hand falls back to asking git."""
    import time

    from lsp_bridge.core import change_key

    settle = change_key.MARGIN_NS / 1e9 + 0.05
    repo = new_repo(tmp_path / "svc", commits=3)
    parent = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=repo, capture_output=True, text=True,
                            check=True, timeout=120).stdout.strip()
    time.sleep(settle)
    assert inventory([], [str(repo)]).git[0].commits == 3  # read with git, kept with the refs' keys

    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))  # any git process now fails
    assert inventory([], [str(repo)]).git[0].commits == 3

    main = repo / ".git" / "refs" / "heads" / "main"
    if not main.exists():
        main = next((repo / ".git" / "refs" / "heads").iterdir())
    with open(main, "r+") as handle:  # moved by hand, in place: same inode, same size
        handle.write(parent)
    time.sleep(settle)
    assert inventory([], [str(repo)]).git[0].commits is None  # only git could tell: unknown, never the old 3

    monkeypatch.undo()
    assert inventory([], [str(repo)]).git[0].commits == 2


def test_refs_reached_through_a_link_are_always_asked_of_git(tmp_path):
    """A ``refs/heads`` that is a link: a ref moving where it points changes nothing git's
    directory shows, so the kept answers never stand on its keys."""
    import time

    from lsp_bridge.core import change_key
    from lsp_bridge.inventory import history

    repo = new_repo(tmp_path / "svc", commits=2)
    heads = repo / ".git" / "refs" / "heads"
    elsewhere = tmp_path / "heads-elsewhere"
    os.rename(heads, elsewhere)
    os.symlink(elsewhere, heads)
    time.sleep(change_key.MARGIN_NS / 1e9 + 0.05)
    assert history.refs_stat(str(repo / ".git")) is None
    assert inventory([], [str(repo)]).git[0].commits == 2
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "more"], cwd=repo, check=True, timeout=120)
    assert inventory([], [str(repo)]).git[0].commits == 3


def test_a_damaged_history_store_is_read_again(tmp_path):
    from lsp_bridge.inventory import history

    repo = new_repo(tmp_path / "svc", commits=2)
    inventory([], [str(repo)])
    store = Path(history._store_path())
    for damage in ("not json", "[" * 100_000 + "]" * 100_000,
                   json.dumps({"format": history._STORE_FORMAT, "repos": {str(repo / ".git"): {"key": "x"}}}),
                   json.dumps({"format": history._STORE_FORMAT, "repos": {str(repo / ".git"): {
                       "key": history.refs_digest(str(repo / ".git")), "commits": "two"}}})):
        store.write_text(damage)
        assert inventory([], [str(repo)]).git[0].commits == 2


def test_importing_is_cheap_and_warm_up_loads_the_detectors(tmp_path):
    """The first process imports detect-secrets and keeps its patterns; the next one needs no import.

    Both count the same credentials, a JWT included (its plugin validates what its regex finds,
    so it is imported, for real, once a line has something JWT-shaped).
    """
    env_file = tmp_path / ".env"
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(b'{"sub":"1234567890"}').decode().rstrip("=")
    env_file.write_text(
        "GH=ghp_" + "a1B2" * 9 + "\nPLAIN=created_at\nSESSION=" + f"{header}.{body}.c2lnbmF0dXJl" + "\n"
        "NOTJWT=eyJhbGciOiJub3Rqc29u.eyJ.x\n# AKIAABCDEFGHIJKLMNOP\n"
    )
    code = ("import sys\nimport lsp_bridge.inventory.scan as inventory\n"
            "from lsp_bridge.inventory import secrets\n"
            "print('detect_secrets' in sys.modules)\ninventory.warm_up()\ninventory.warm_up()\n"
            "print('detect_secrets' in sys.modules, 'requests' in sys.modules)\n"
            f"print(secrets.count_credentials({str(env_file)!r}))\n"
            "print('detect_secrets' in sys.modules)\n")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout.split()
    assert first == ["False", "True", "True", "3", "True"]
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "rootguard" / "detect-secrets-patterns.json"
    assert cache.exists()
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout.split()
    assert second == ["False", "False", "False", "3", "True"]  # the JWT line needed its plugin
    cache.write_text("{not json")  # a damaged cache is not trusted: the plugins are imported again
    third = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout.split()
    assert third == first


# ---------------------------------------------------------------- secrets_scan


def test_credential_lines_are_counted_not_shown(tmp_path):
    env = tmp_path / ".env"
    env.write_text(
        "# API_KEY=your-key-here\n"
        "SORT_KEY=created_at\nTOKEN_TTL=3600\nAUTH_ENABLED=true\n"
        "PUBLIC_KEY=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n"
        "NPM_TOKEN=${NPM_TOKEN}\n"
        "DB_PASSWORD=hunter22hunter\n"
        "DB_PASSWORD=hunter22hunter\n"  # the same line twice counts once
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7REALKEY\n"
        "AWS_SECRET_ACCESS_KEY=AKIAIOSFODNN7EXAMPLE\n"  # AWS's documented sample key: a placeholder
        "DATABASE_URL=postgres://app:pw1234@db/app\n"
    )
    assert count_credentials(str(env)) == 3


def test_large_binary_and_linked_files_are_judged_by_name(tmp_path):
    big = tmp_path / ".env.big"
    big.write_text("X=1\n" * 300_000)  # over 1 MiB
    assert count_credentials(str(big)) == 1
    keystore = tmp_path / "release.p12"
    keystore.write_bytes(b"\x30\x82\x00\x00")
    assert count_credentials(str(keystore)) == 1
    blob = tmp_path / "notes.bin"
    blob.write_bytes(b"DB_PASSWORD=x\x00\x01")
    assert count_credentials(str(blob)) == 0
    link = tmp_path / ".env.link"
    link.symlink_to(tmp_path / ".env.big")
    assert count_credentials(str(link)) == 0  # links are not followed


def test_private_keys_and_netrc(tmp_path):
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA==\n-----END OPENSSH PRIVATE KEY-----\n")
    assert count_credentials(str(key)) == 1
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine api.example.com login me password s3cr3t-pw\n")
    assert count_credentials(str(netrc)) == 1


NAMES = {
    True: [".env", ".env.local", ".envrc", "prod.env", "prod.tfvars", "x.auto.tfvars.json",
           "terraform.tfstate", "server.pem", "tls.key", "id_rsa", "id_ed25519_old",
           ".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".pgpass",
           "store.p12", "vault.kdbx", "secrets.yml", ".secrets.toml", "client_secret_1.json",
           "application_default_credentials.json", ".dockercfg", ".ENV", ".Env.Local", "PROD.TFVARS",
           "ID_ED25519", "_NETRC", "Client_Secret.json"],
    False: ["id_rsa.pub", "ID_RSA.PUB", "package.json", "index.ts", "environment.ts", "README.md",
            "credentials", "config.json", "keys.ts"],
}


@pytest.mark.parametrize("name", NAMES[True])
def test_credential_names_and_the_listing_hint(name):
    import re

    assert is_credential_name(name)
    assert re.search(CREDENTIAL_NAME_HINT, "\x00" + name)


def test_every_credential_file_name_is_found_in_a_directory_listing(tmp_path):
    for name in NAMES[True] + NAMES[False]:
        (tmp_path / name).write_text("DB_PASSWORD=Qw12Er34Ty56Ui78\n")
    report = inventory([], [str(tmp_path)])
    assert sorted(os.path.basename(c.path) for c in report.credentials) == sorted(NAMES[True])


@pytest.mark.parametrize("name", NAMES[False])
def test_names_that_are_not_credential_files(name):
    assert not is_credential_name(name)


def test_credential_names_that_depend_on_their_directory():
    assert is_credential_name("credentials", ".aws")
    assert is_credential_name("config.json", ".docker")
    assert is_credential_name("config", ".kube")


# ---------------------------------------------------------------- what a person reads


def _report(**fields):
    from lsp_bridge.inventory.model import InventoryReport

    base = dict(before=("/p/app",), after=("/",), added_roots=("/",), widens=True,
                files_before=10, files_after=5000)
    return InventoryReport(**{**base, **fields})


def test_a_disk_root_union_prints_no_double_slash_and_long_lists_are_shortened():
    from lsp_bridge.inventory.model import CredentialFile

    creds = tuple(CredentialFile(f"/srv/app{n}/.env", 1) for n in range(335))
    text = "\n".join(_report(credentials=creds, errors=tuple(f"/x{n}: Permission denied" for n in range(40)))
                     .describe())
    assert "//" not in text
    assert "335 credentials in 335 files: /srv/app0/.env (1)" in text and "(+327 more)" in text
    assert "Not inventoried (40 places):" in text and "(+32 more)" in text


def test_stores_are_grouped_one_line_for_the_repository_store_one_for_the_rest():
    from lsp_bridge.inventory.model import Store

    stores = (Store("/r/node_modules/.pnpm", 4000),) + tuple(
        Store(f"/r/fixtures/f{n}/node_modules", 1) for n in range(27))
    lines = _report(after=("/r",), added_roots=("/r",), stores=stores).describe()
    store_lines = [line for line in lines if "node_modules" in line]
    assert store_lines[0] == "Package store r/node_modules/.pnpm: 4,000 files (third-party, not counted above)"
    assert store_lines[1].startswith("27 other node_modules folders (27 files, not counted above): ")
    assert store_lines[1].endswith("(+24 more)") and len(store_lines) == 2


def test_ci_identities_are_aws_azure_and_gcp_never_secret_references(tmp_path):
    workflows = tmp_path / "repo" / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "deploy.yml").write_text(
        "jobs:\n  aws:\n    steps:\n      - uses: aws-actions/configure-aws-credentials@v4\n"
        "        with:\n          role-to-assume: ${{ secrets.AWS_ROLE_ARN }}\n"
        "      - uses: aws-actions/configure-aws-credentials@v4\n"
        "        with:\n          role-to-assume: arn:aws:iam::123456789012:role/deploy\n"
        "  azure:\n    steps:\n      - uses: azure/login@v2\n        with:\n"
        "          client-id: 0b6f3a9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b\n"
        "          tenant-id: ${{ secrets.AZURE_TENANT_ID }}\n"
        "  gcp:\n    steps:\n      - uses: google-github-actions/auth@v2\n        with:\n"
        "          workload_identity_provider: 'projects/123456/locations/global/workloadIdentityPools/gh/providers/gh'\n"
        "          service_account: deployer@shop-prod.iam.gserviceaccount.com\n")
    (workflows / "secrets-only.yml").write_text(
        "steps:\n  - with:\n      role-to-assume: ${{ secrets.AWS_ROLE_ARN }}\n"
        "      workload_identity_provider: ${{ vars.WIF_PROVIDER }}\n")
    report = inventory([], [str(tmp_path / "repo")])
    (ci,) = report.ci_roles
    assert ci.path.endswith("deploy.yml")
    assert [(i.cloud, i.kind, i.value) for i in ci.identities] == [
        ("aws", "role", "arn:aws:iam::123456789012:role/deploy"),
        ("azure", "client-id", "0b6f3a9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"),
        ("gcp", "workload identity provider",
         "projects/123456/locations/global/workloadIdentityPools/gh/providers/gh"),
        ("gcp", "service account", "deployer@shop-prod.iam.gserviceaccount.com"),
    ]
    text = "\n".join(report.describe())
    assert "secrets." not in text and "AWS role arn:aws:iam::123456789012:role/deploy" in text
    assert "Azure client-id 0b6f3a9e" in text


@pytest.mark.parametrize("name, text", [
    (".env.example", "API_KEY=your-api-key-here\nDB_PASSWORD=changeme\nTOKEN=${TOKEN}\nSECRET=<your-key>\n"
                     "DATABASE_URL=postgres://user:password@localhost/app\nSTRIPE_KEY=sk_test_xxxxxxxxxxxxxxxx\n"),
    (".env", "API_KEY=<your-key>\nDB_PASSWORD=changeme\nTOKEN=${TOKEN}\nAWS_SECRET=${AWS_SECRET:-}\n"
             "PASSWORD=\"<password>\"\nAUTH_TOKEN=your_token_here\nDATABASE_URL=postgres://app:changeme@db/app\n"),
])
def test_placeholders_are_not_credentials(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert count_credentials(str(tmp_path / name)) == 0


def test_real_values_next_to_placeholders_still_count(tmp_path):
    (tmp_path / ".env").write_text("API_KEY=<your-key>\nDB_PASSWORD=Qw12Er34Ty56Ui78\n"
                                   "DATABASE_URL=postgres://app:hunter2xyz@db.internal/app\n")
    assert count_credentials(str(tmp_path / ".env")) == 2
    (tmp_path / ".env.example").write_text("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7REALKEY\nDB_PASSWORD=changeme\n")
    assert count_credentials(str(tmp_path / ".env.example")) == 1


@pytest.mark.parametrize("fifo", ["shallow", "refs/heads/evil", "packed-refs"])
def test_a_fifo_where_git_reads_makes_the_history_unknown_at_once(tmp_path, fifo):
    """An agent that can write .git can make a file git reads a FIFO: git (and a plain open) would
    wait for a writer. The inventory answers at once: the history is unknown, never empty."""
    repo = new_repo(tmp_path / "svc", commits=2)
    (repo / "sub").mkdir()
    os.mkfifo(repo / ".git" / fifo)
    shown = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "inventory", "--json", "--root",
                            str(repo / "sub"), "--add", str(repo)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    git_dir = json.loads(shown.stdout)["git"][0]
    assert git_dir["commits"] is None


def test_a_ci_file_swapped_for_a_fifo_or_a_link_is_not_read(tmp_path):
    from lsp_bridge.inventory.ci import read_identities

    fifo = tmp_path / "deploy.yml"
    os.mkfifo(fifo)
    assert read_identities(str(fifo)) == ((), False)  # at once: not opened for a writer that never comes
    outside = tmp_path / "outside.yml"
    outside.write_text("role-to-assume: arn:aws:iam::123456789012:role/outside\n")
    link = tmp_path / "linked.yml"
    link.symlink_to(outside)
    assert read_identities(str(link)) == ((), False)
    assert read_identities(str(outside))[0][0].value == "arn:aws:iam::123456789012:role/outside"
