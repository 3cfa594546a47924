"""Configuration loading: sources, precedence, strict validation, fail-closed reloads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.core.config import (
    MAX_CONFIG_BYTES,
    ConfigKeeper,
    config_candidates,
    diagnostics_for_text,
    find_project_config,
    load_config,
    parse_file,
    user_config_path,
)
from lsp_bridge.core.settings import DENY_ALL

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An isolated HOME / XDG_CONFIG_HOME so the real user config is never read."""
    home = tmp_path / "home"
    (home / "xdg").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    monkeypatch.delenv("ROOTGUARD_CONFIG", raising=False)
    monkeypatch.delenv("ROOTGUARD_ROOTS", raising=False)
    return home


@pytest.fixture
def user_file(home) -> Path:
    path = Path(user_config_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git checkout with a package inside it."""
    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    (root / "packages" / "checkout").mkdir(parents=True)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def errors(result) -> list[str]:
    return [d.format() for d in result.diagnostics if d.severity == "error"]


# --------------------------------------------------------------------------- sources


def test_user_config_path_uses_platform_dir_and_env_override(home, tmp_path, monkeypatch):
    assert user_config_path() == str(home / "xdg" / "rootguard" / "config.toml")
    other = tmp_path / "elsewhere.toml"
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(other))
    assert user_config_path() == str(other)
    monkeypatch.setenv("ROOTGUARD_CONFIG", "relative.toml")
    with pytest.raises(ValueError, match="ROOTGUARD_CONFIG"):
        user_config_path()


def test_no_files_gives_builtin_version_2_defaults(home, repo):
    result = load_config(str(repo))
    config = result.config
    assert result.diagnostics == ()
    assert config.version == 2
    assert config.roots is None  # the editor's folders are the boundary
    assert config.allow_temp_directory is False
    assert config.files == ()
    assert config.project_file is None
    assert config.project_root == str(repo)
    assert config.user_file == os.path.realpath(user_config_path())


def test_precedence_user_then_project_then_environment(home, user_file, repo, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    write(
        user_file,
        f"""version = 2
[workspace]
roots = ["{elsewhere}"]
worktrees = "request"
[approvals]
timeout_seconds = 10
[[paths]]
id = "grant"
path = "{tmp_path / 'granted'}"
policies = {{ read = "allow" }}
[[paths]]
id = "shared"
path = "{tmp_path / 'user-shared'}"
policies = {{ read = "deny" }}
""",
    )
    write(
        repo / ".rootguard.toml",
        """version = 2
[workspace]
roots = ["."]
worktrees = "ignore"
[[paths]]
id = "shared"
path = "node_modules/.pnpm"
policies = { read = "allow", write = "deny" }
""",
    )
    config = load_config(str(repo)).config
    assert config.roots == (str(repo),) and config.roots_source == "project"
    assert config.worktrees == "ignore"
    assert config.approval_timeout == 10.0  # tables merge key by key
    by_id = {(rule.source, rule.id): rule for rule in config.paths}
    # ids are per source: the project's "shared" never replaces the user's (PRODUCT.md "Layering")
    assert [(rule.source, rule.id) for rule in config.paths] == [("user", "grant"), ("user", "shared"), ("project", "shared")]
    assert by_id["user", "shared"].read == "deny"
    shared = by_id["project", "shared"]
    assert (shared.source, shared.anchor, shared.base_dir) == ("project", str(repo / "node_modules/.pnpm"), str(repo))
    assert (shared.read, shared.write, shared.delete) == ("allow", "deny", "deny")  # delete inherits write
    assert shared.file == str(repo / ".rootguard.toml")
    assert config.files == (str(user_file), str(repo / ".rootguard.toml"))

    one, two = tmp_path / "one", tmp_path / "two"
    monkeypatch.setenv("ROOTGUARD_ROOTS", f"{one}{os.pathsep}{two}")
    config = load_config(str(repo)).config
    assert config.roots == (str(one), str(two)) and config.roots_source == "environment"


def test_user_file_relative_paths_resolve_against_project_root(home, user_file, repo):
    write(user_file, 'version = 2\n[workspace]\nroots = ["packages"]\n[[paths]]\nid = "build"\npath = "build"\n')
    config = load_config(str(repo)).config
    assert config.roots == (str(repo / "packages"),)
    (rule,) = config.paths
    assert (rule.anchor, rule.base_dir, rule.source) == (str(repo / "build"), str(repo), "user")


def test_user_file_relative_path_without_project_root_is_an_error(home, user_file):
    write(user_file, 'version = 2\n[[paths]]\nid = "build"\npath = "build"\n')
    result = load_config(None)
    assert result.config is None
    assert errors(result) == [
        f"{user_file}:4:8: error: `paths[0].path` is relative ('build') but there is no project root "
        "to resolve it against [relative-path-without-project]"
    ]


def test_home_relative_and_absolute_paths(home, user_file, repo):
    write(user_file, 'version = 2\n[[paths]]\nid = "notes"\npath = "~/notes"\n')
    (rule,) = load_config(str(repo)).config.paths
    assert (rule.anchor, rule.base_dir) == (str(home / "notes"), None)


def test_project_file_found_above_package_anchors_the_checkout(home, repo):
    write(repo / ".rootguard.toml", 'version = 2\n[[paths]]\nid = "store"\npath = "node_modules/.pnpm"\n')
    config = load_config(str(repo / "packages" / "checkout")).config
    assert config.project_file == str(repo / ".rootguard.toml")
    assert config.project_root == str(repo)
    (rule,) = config.paths
    assert rule.anchor == str(repo / "node_modules" / ".pnpm")
    assert rule.base_dir == str(repo)


def test_upward_search_stops_at_the_directory_holding_git(tmp_path, repo):
    above = write(tmp_path / ".rootguard.toml", "version = 2\n")  # above the repository
    start = repo / "packages" / "checkout"
    assert find_project_config(str(start)) is None
    nearest = write(repo / "packages" / ".rootguard.toml", "version = 2\n")
    assert find_project_config(str(start)) == str(nearest)
    nearest.unlink()
    top = write(repo / ".rootguard.toml", "version = 2\n")  # the .git directory's own level counts
    assert find_project_config(str(start)) == str(top)
    assert above.exists()


def test_linked_worktree_git_file_also_stops_the_search(tmp_path):
    outer = tmp_path / "outer"
    write(outer / ".rootguard.toml", "version = 2\n")
    worktree = outer / "wt"
    write(worktree / ".git", "gitdir: ../main/.git/worktrees/wt\n")
    (worktree / "src").mkdir()
    assert find_project_config(str(worktree / "src")) is None


def test_without_git_only_the_start_directory_is_checked(tmp_path):
    parent = tmp_path / "plain"
    start = parent / "child"
    start.mkdir(parents=True)
    write(parent / ".rootguard.toml", "version = 2\n")
    assert find_project_config(str(start)) is None
    own = write(start / ".rootguard.toml", "version = 2\n")
    assert find_project_config(str(start)) == str(own)


def test_rootguard_config_names_the_user_file(home, repo, tmp_path, monkeypatch):
    other = write(tmp_path / "team.toml", 'version = 2\n[workspace]\nworktrees = "request"\n')
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(other))
    config = load_config(str(repo)).config
    assert config.worktrees == "request"
    assert config.user_file == str(other) and config.files == (str(other),)


def test_rootguard_config_naming_a_missing_file_fails_closed(home, repo, tmp_path, monkeypatch):
    missing = tmp_path / "typo.toml"
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(missing))
    result = load_config(str(repo))
    assert result.config is None
    assert errors(result) == [f"{missing}: error: configuration file not found: {missing} [config-missing]"]


def test_rootguard_roots_relative_entry_is_dropped_with_an_error(home, repo, tmp_path, monkeypatch):
    good = tmp_path / "good"
    monkeypatch.setenv("ROOTGUARD_ROOTS", f"relative/dir{os.pathsep}{good}")
    result = load_config(str(repo))
    assert result.config.roots == (str(good),)
    assert errors(result) == [
        "<input>: error: ROOTGUARD_ROOTS entry 'relative/dir' is not an absolute path; ignored [bad-environment-root]"
    ]


def test_rootguard_roots_all_invalid_denies_instead_of_falling_back(home, repo, monkeypatch):
    write(repo / ".rootguard.toml", 'version = 2\n[workspace]\nroots = ["."]\n')
    monkeypatch.setenv("ROOTGUARD_ROOTS", f"a{os.pathsep}b")
    config = load_config(str(repo)).config
    assert config.roots == () and config.roots_source == "environment"


def test_relative_project_root_is_refused(home):
    result = load_config("relative/project")
    assert result.config is None
    assert errors(result)[0].endswith("[bad-project-root]")


def test_mounts_resolve_sources_and_keep_posix_targets(home, repo):
    write(
        repo / ".rootguard.toml",
        'version = 2\n[[mounts]]\nsource = "node_modules/.pnpm"\ntarget = "/workspace//node_modules/.pnpm/"\n'
        '[[mounts]]\nsource = "/srv/cache"\ntarget = "/cache"\nmode = "rw"\n',
    )
    first, second = load_config(str(repo)).config.mounts
    assert (first.source, first.target, first.mode) == (
        str(repo / "node_modules" / ".pnpm"),
        "/workspace/node_modules/.pnpm",
        "ro",
    )
    assert (second.target, second.mode) == ("/cache", "rw")


def test_symlinked_project_root_is_canonical(home, repo, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(repo, target_is_directory=True)
    write(repo / ".rootguard.toml", 'version = 2\n[workspace]\nroots = ["."]\n')
    config = load_config(str(link)).config
    assert config.project_root == str(repo) and config.roots == (str(repo),)
    assert config.project_file == str(repo / ".rootguard.toml")


# --------------------------------------------------------------------------- strict validation

FILE = "/project/.rootguard.toml"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'version = 2\n[workspace]\nroot = ["."]\n',
            "3:1: error: unknown key `workspace.root` (expected one of: roots, worktrees, git) [unknown-key]",
        ),
        (
            "version = 2\nroots = []\n",
            "2:1: error: unknown key `roots` (expected one of: version, workspace, approvals, agents, paths, "
            "mounts, safety, sandbox) [unknown-key]",
        ),
        (
            'version = 2\n[approvals]\ntimeout_seconds = "30"\n',
            "3:19: error: `approvals.timeout_seconds` must be a number of seconds, not a string [wrong-type]",
        ),
        (
            "version = 2\n[approvals]\ntimeout_seconds = 7200\n",
            "3:19: error: `approvals.timeout_seconds` must be > 0 and <= 3600, not 7200 [bad-value]",
        ),
        (
            'version = 2\n[workspace]\nworktrees = "sometimes"\n',
            "3:13: error: `workspace.worktrees` must be one of include, request, ignore, not 'sometimes' [bad-value]",
        ),
        (
            'version = 2\n[[paths]]\nid = "a"\npath = "."\npolicies = { read = "allow", write = "maybe" }\n',
            "5:38: error: `paths[0].policies.write` must be one of allow, request, deny, not 'maybe' [bad-value]",
        ),
        (
            'version = 2\n[[paths]]\nid = "a"\npath = "."\npolicies = { read = "allow", wirte = "deny" }\n',
            "5:30: error: unknown key `paths[0].policies.wirte` (expected one of: read, write, delete) [unknown-key]",
        ),
        (
            'version = 2\n[[paths]]\nid = "a"\npath = "."\nexcludes = [\n  ".env*",\n  "src\\\\",\n]\n',
            "7:3: error: `paths[0].excludes[1]` is not a valid glob ('src\\\\'): backslash escapes are not supported [bad-glob]",
        ),
        (
            'version = 2\n[[paths]]\nid = "a"\npath = "."\nincludes = ["!secret"]\n',
            "5:13: error: `paths[0].includes[0]` is not a valid glob ('!secret'): negated globs are not "
            "supported; use `excludes` [bad-glob]",
        ),
        (
            'version = 2\n[[paths]]\nid = "a"\npath = "."\n\n[[paths]]\nid = "a"\npath = "b"\n',
            "7:6: error: duplicate [[paths]] id 'a' (first at line 3) [duplicate-id]",
        ),
        (
            'version = 2\n\n[[paths]]\npath = "."\n',
            "3:1: error: `paths[0]` needs `id` [missing-key]",
        ),
        (
            'version = 2\n[[paths]]\nid = "a"\npath = "."\nfollow_symlinks = "yes"\n',
            "5:19: error: `paths[0].follow_symlinks` must be a boolean (true or false), not a string [wrong-type]",
        ),
        (
            'version = 2\n[[mounts]]\nsource = "."\ntarget = "workspace"\nmode = "ro"\n',
            "4:10: error: `mounts[0].target` must be an absolute POSIX path [bad-path]",
        ),
        (
            'version = 2\n[workspace\nroots = ["."]\n',
            "2:11: error: invalid TOML: Expected ']' at the end of a table declaration [toml-syntax]",
        ),
        (
            'version = 2\n[workspace]\nroots = ["." "b"]\n',
            "3:14: error: invalid TOML: Unclosed array [toml-syntax]",
        ),
        (
            'version = 2\n[workspace]\nworktrees = "include"\nworktrees = "ignore"\n',
            "4:21: error: invalid TOML: Cannot overwrite a value [toml-syntax]",
        ),
        (
            "version = 2\n\n[safety]\nallow_any_path = true\n",
            "3:1: error: `[safety]` is version 1 only; version 2 expresses it with [[paths]] rules [safety-in-v2]",
        ),
        (
            "version = 3\n",
            "1:11: error: `version` must be 1 or 2, not 3 [unsupported-version]",
        ),
    ],
)
def test_validation_errors_name_file_line_and_column(text, expected):
    found = [d.format() for d in diagnostics_for_text(text, FILE, "project", "/project") if d.severity == "error"]
    assert found == [f"{FILE}:{expected}"]


def test_every_error_in_a_file_is_reported_in_file_order():
    text = 'version = 2\n[workspace]\nworktrees = 1\n[[paths]]\nid = 2\npath = "."\ncolour = "red"\n'
    found = [d.format() for d in diagnostics_for_text(text, FILE, "project", "/project")]
    assert [line.split(": ")[0] for line in found] == [f"{FILE}:3:13", f"{FILE}:5:6", f"{FILE}:7:1"]


def test_a_file_with_an_error_yields_no_configuration(home, repo):
    write(repo / ".rootguard.toml", 'version = 2\n[workspace]\nroots = ["/"]\nworktree = "include"\n')
    result = load_config(str(repo))
    assert result.config is None
    assert errors(result) == [
        f"{repo / '.rootguard.toml'}:4:1: error: unknown key `workspace.worktree` "
        "(expected one of: roots, worktrees, git) [unknown-key]"
    ]


# --------------------------------------------------------------------------- version 1


V1 = """# old style
[workspace]
roots = ["."]

[safety]
allow_any_path = false
allow_external_roots = true
allow_temp_directory = false
follow_symlinks = true

[[paths]]
id = "src"
path = "src"
"""


def test_v1_file_loads_with_one_deprecation_per_boolean(home, repo):
    project = write(repo / ".rootguard.toml", V1)
    result = load_config(str(repo))
    config = result.config
    deprecations = [d for d in result.diagnostics if d.code == "deprecated-v1-boolean"]
    assert [(d.severity, d.tags, d.range.start_line, d.range.start_column) for d in deprecations] == [
        ("warning", ("deprecated",), line, 0) for line in (5, 6, 7, 8)
    ]
    assert deprecations[1].format().startswith(f"{project}:7:1: warning: `safety.allow_external_roots`")
    assert (deprecations[1].range.end_line, deprecations[1].range.end_column) == (6, 20)  # the key
    assert not errors(result)
    assert config.version == 1
    assert (config.allow_any_path, config.allow_external_roots, config.allow_temp_directory) == (False, True, False)
    assert config.follow_symlinks is True
    assert config.paths[0].follow_symlinks is True  # v1 followed links everywhere
    assert set(deprecations) <= set(config.diagnostics)


def test_v1_defaults_allow_the_temp_directory_and_v2_never_does(home, repo):
    write(repo / ".rootguard.toml", '[workspace]\nworktrees = "include"\n')
    result = load_config(str(repo))
    assert result.config.version == 1
    assert result.config.allow_temp_directory is True
    assert [d.code for d in result.diagnostics] == ["config-version-1"]
    write(repo / ".rootguard.toml", 'version = 2\n[workspace]\nworktrees = "include"\n')
    assert load_config(str(repo)).config.allow_temp_directory is False


def test_v1_booleans_must_be_booleans(home, repo):
    write(repo / ".rootguard.toml", 'version = 1\n[safety]\nallow_any_path = "yes"\nallow_everything = true\n')
    result = load_config(str(repo))
    assert result.config is None
    assert [e.split(": error: ")[0] for e in errors(result)] == [
        f"{repo / '.rootguard.toml'}:3:18",
        f"{repo / '.rootguard.toml'}:4:1",
    ]


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('version = 2\n[[paths]]\nid = "a"\npath = "src\\u0000/../etc"\n', "bad-path"),
        ('version = 2\n[[paths]]\nid = "a"\npath = ["src"]\n', "wrong-type"),
        ('version = 2\n[[paths]]\nid = "a"\npath = ""\n', "bad-path"),
        ('version = 2\n[workspace]\nroots = [".", 1979-05-27]\n', "wrong-type"),
        ("version = 2\npaths = 3\n", "wrong-type"),
        ('version = 2\n[paths]\nid = "a"\n', "wrong-type"),
        ("version = 2\n[[mounts]]\ntarget = \"/w\"\n", "missing-key"),
        ('version = 2\n[workspace]\nroots = "."\n', "wrong-type"),
        ("version = true\n", "wrong-type"),
        ("version = 2\n" + "x = " + "[" * 3000 + "]" * 3000 + "\n", "toml-syntax"),
        ("version = 2\n" + "[" * 3000 + "\n", "toml-syntax"),
        ("version = 2\na = { b = 1, b = 2 }\n", "toml-syntax"),
        ("version = 2\nx = 1\n\x00\x01", "toml-syntax"),
        ("version = nan\n", "wrong-type"),
        ('version = 2\n[approvals]\ntimeout_seconds = nan\n', "bad-value"),
    ],
)
def test_hostile_values_are_errors_never_crashes(text, code):
    found = diagnostics_for_text(text, FILE, "project", "/project")
    assert code in {d.code for d in found if d.severity == "error"}


def test_nul_in_a_path_is_named(home, repo):
    write(repo / ".rootguard.toml", 'version = 2\n[[paths]]\nid = "a"\npath = "src\\u0000x"\n')
    assert errors(load_config(str(repo))) == [
        f"{repo / '.rootguard.toml'}:4:8: error: `paths[0].path` contains a NUL byte [bad-path]"
    ]


def test_huge_file_is_refused(home, repo):
    big = repo / ".rootguard.toml"
    write(big, "version = 2\n" + "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    result = load_config(str(repo))
    assert result.config is None
    assert errors(result) == [
        f"{big}: error: configuration file {big} is larger than {MAX_CONFIG_BYTES} bytes [config-too-large]"]


def test_config_that_is_a_directory_is_an_error_naming_it(home, repo):
    (repo / ".rootguard.toml").mkdir()
    result = load_config(str(repo))
    assert result.config is None
    assert errors(result) == [
        f"{repo / '.rootguard.toml'}: error: configuration file {repo / '.rootguard.toml'} is a directory [config-unreadable]"
    ]


def test_fifo_and_dangling_link_and_bad_encoding_are_errors(home, repo, tmp_path):
    target = repo / ".rootguard.toml"
    os.mkfifo(target)
    assert "is not a regular file" in errors(load_config(str(repo)))[0]
    target.unlink()
    target.symlink_to(tmp_path / "gone.toml")
    assert errors(load_config(str(repo)))[0].endswith("[config-missing]")
    target.unlink()
    target.write_bytes(b"version = 2\n# caf\xe9\n")
    assert errors(load_config(str(repo))) == [
        f"{target}:2:6: error: configuration file {target} is not UTF-8 [config-encoding]"
    ]


LOAD_AND_PRINT_ERRORS = """
import json, sys
from lsp_bridge.core.config import load_config
result = load_config(sys.argv[1])
print(json.dumps([result.config is None, [d.format() for d in result.diagnostics if d.severity == "error"]]))
"""


def test_unreadable_user_file_is_an_error_naming_it(home, user_file, repo):
    user_file.write_text("version = 2\n")
    user_file.chmod(0)
    try:
        if not os.access(user_file, os.R_OK):
            result = load_config(str(repo))
            failed, found = result.config is None, errors(result)
        else:  # root ignores file modes: read it as root without the capabilities that do so
            setpriv = shutil.which("setpriv")
            assert setpriv, "setpriv (util-linux) is needed to drop root's file-mode override"
            done = subprocess.run([setpriv, "--bounding-set=-dac_override,-dac_read_search", "--",
                                   sys.executable, "-c", LOAD_AND_PRINT_ERRORS, str(repo)],
                                  capture_output=True, text=True, timeout=60, cwd=str(REPO_ROOT),
                                  env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
            assert done.returncode == 0, done.stderr
            failed, found = json.loads(done.stdout)
    finally:
        user_file.chmod(0o600)
    assert failed
    assert found == [
        f"{user_file}: error: cannot read configuration file {user_file}: Permission denied [config-unreadable]"
    ]


def test_symlink_loop_is_an_error_naming_the_file(home, repo):
    target = repo / ".rootguard.toml"
    target.symlink_to(target)
    result = load_config(str(repo))
    assert result.config is None
    assert errors(result) == [
        f"{target}: error: cannot read configuration file {target}: Too many levels of symbolic links "
        "[config-unreadable]"
    ]


def test_config_candidates_lists_every_file_that_could_become_active(home, repo):
    start = repo / "packages" / "checkout"
    assert config_candidates(str(start)) == [
        user_config_path(),
        str(start / ".rootguard.toml"),
        str(repo / "packages" / ".rootguard.toml"),
        str(repo / ".rootguard.toml"),
    ]


def test_parse_file_reports_the_version(tmp_path):
    path = write(tmp_path / "c.toml", "version = 2\n")
    parsed = parse_file(str(path), source="user", base_dir=str(tmp_path))
    assert parsed.ok and parsed.version == 2 and parsed.diagnostics == ()


# --------------------------------------------------------------------------- keeper


def test_keeper_keeps_the_last_good_configuration_on_a_broken_edit(home, repo):
    project = write(repo / ".rootguard.toml", 'version = 2\n[workspace]\nroots = ["packages"]\n')
    keeper = ConfigKeeper(str(repo))
    assert keeper.healthy and keeper.current.roots == (str(repo / "packages"),)
    good = keeper.current

    write(project, 'version = 2\n[workspace]\nroots = ["/"\n')  # half-typed edit
    result = keeper.reload()
    assert result.config is None and not keeper.healthy
    assert keeper.current is good  # never widened to "/"
    assert keeper.diagnostics[0].code == "toml-syntax"

    write(project, 'version = 2\n[workspace]\nroots = ["packages/checkout"]\n')
    keeper.reload()
    assert keeper.healthy and keeper.current.roots == (str(repo / "packages" / "checkout"),)


def test_keeper_denies_everything_when_the_first_load_fails(home, repo):
    write(repo / ".rootguard.toml", "version = 2\nworkspace = 7\n")
    keeper = ConfigKeeper(str(repo))
    assert keeper.current is DENY_ALL
    assert keeper.current.roots == ()
    assert keeper.diagnostics[0].code == "wrong-type"
