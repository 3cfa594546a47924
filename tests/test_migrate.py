"""``rootguard config migrate``: preview, --check, --write, and what the result means."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from lsp_bridge.core.config import load_config, user_config_path
from lsp_bridge.core.migrate import main_migrate, migrate_text, needs_migration, write_migration
from lsp_bridge.core.paths import canonical

V1 = """# Root Guard settings for this checkout
# (kept by the platform team)

[workspace]
roots = ["."]   # the checkout only
worktrees = "request"

[safety]
# legacy switches
allow_any_path = false
allow_external_roots = true
follow_symlinks = true

[[paths]]
id = "pnpm-store"   # shared store
path = "node_modules/.pnpm"
policies = { read = "allow", write = "deny" }

[[paths]]
id = "dotenv"
path = "."
excludes = [".env*"]  # never the secrets

[paths.policies]
read = "deny"

# end of file
"""

KEPT_COMMENTS = [
    "# Root Guard settings for this checkout",
    "# (kept by the platform team)",
    "# the checkout only",
    "# shared store",
    "# never the secrets",
    "# end of file",
]


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "xdg").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    monkeypatch.delenv("ROOTGUARD_CONFIG", raising=False)
    monkeypatch.delenv("ROOTGUARD_ROOTS", raising=False)
    return home


@pytest.fixture
def project(tmp_path, home) -> Path:
    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    config = root / ".rootguard.toml"
    config.write_text(V1, encoding="utf-8")
    config.chmod(0o640)
    return config


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main_migrate(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def temp_dir() -> str:
    return canonical(tempfile.gettempdir())


# --------------------------------------------------------------------------- translation


def test_translation_keeps_comments_order_and_adds_reviewable_rules():
    result = migrate_text(V1, "/repo/.rootguard.toml")
    text = result.new_text
    assert text.startswith("version = 2\n# Root Guard settings for this checkout\n")
    for comment in KEPT_COMMENTS:
        assert comment in text
    assert "\n[safety]" not in text and "# legacy switches" not in text
    assert text.index("[workspace]") < text.index('id = "pnpm-store"') < text.index('id = "dotenv"')
    assert 'policies = { read = "allow", write = "deny" }\nfollow_symlinks = true\n' in text
    assert 'excludes = [".env*"]  # never the secrets\nfollow_symlinks = true\n\n[paths.policies]' in text
    assert (
        "# migrated from [safety] allow_temp_directory: review; v2 never allows the temp dir implicitly\n"
        "[[paths]]\n"
        'id = "temp-directory"\n'
        f'path = "{temp_dir()}"\n'
        'policies = { read = "allow", write = "allow" }\n'
        "follow_symlinks = true\n"
    ) in text
    assert "allow_external_roots = true: dropped" in text
    assert 'id = "any-path"' not in text
    assert result.changes[0] == "set version = 2"
    assert needs_migration(V1) and not needs_migration(text)


def test_translation_of_each_boolean():
    text = migrate_text(
        "[safety]\nallow_any_path = true\nallow_temp_directory = false\nfollow_symlinks = true\n", "/c.toml"
    ).new_text
    assert "temp-directory" not in text and "follow_symlinks = true" in text
    assert "# REVIEW: migrated from [safety] allow_any_path = true" in text
    assert 'id = "any-path"\npath = "/"\npolicies = { read = "allow", write = "allow" }\n' in text
    assert "allow_external_roots" not in text


@pytest.mark.parametrize("safety", ["follow_symlinks = false\n", ""])
def test_follow_symlinks_false_is_refused_naming_the_boolean_and_nothing_is_written(capsys, project, safety):
    """Version 2 follows links inside the workspace when no rule decides: no faithful translation exists."""
    text = f"[safety]\nallow_temp_directory = false\n{safety}"
    project.write_text(text, encoding="utf-8")
    before = sorted(p.name for p in project.parent.iterdir())
    for args in ([], ["--write"]):
        code, out, err = run(capsys, *args, str(project))
        assert code == 2 and "follow_symlinks" in err and "Nothing was written" in err
    assert project.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in project.parent.iterdir()) == before


def test_preview_lists_each_behaviour_change(capsys, project):
    code, out, err = run(capsys, str(project))
    assert code == 0
    behaviour = [line.strip() for line in err.splitlines() if line.strip().startswith("behaviour:")]
    assert any("temporary directory" in line for line in behaviour)
    assert any("allow_external_roots" in line for line in behaviour)
    assert any("rename across roots" in line for line in behaviour)
    assert any("symbolic links" in line for line in behaviour)


def test_existing_version_1_key_is_updated_in_place_with_its_comment():
    text = migrate_text('version = 1  # pinned\n[workspace]\nworktrees = "ignore"\n'
                        '[safety]\nallow_temp_directory = false\nfollow_symlinks = true\n', "/c.toml").new_text
    assert text == 'version = 2  # pinned\n[workspace]\nworktrees = "ignore"\n'


def test_crlf_files_stay_crlf():
    text = migrate_text("# head\r\n[safety]\r\nallow_temp_directory = true\r\n", "/c.toml").new_text
    assert "\n" not in text.replace("\r\n", "")


def test_inline_paths_array_gets_inline_rules():
    source = 'paths = [{ id = "a", path = "/srv" }]\n[safety]\nfollow_symlinks = true\n'
    result = migrate_text(source, "/c.toml")
    assert result.ok
    assert 'id = "temp-directory"' in result.new_text and "[[paths]]" not in result.new_text


def test_rule_id_collision_gets_a_fresh_id():
    source = '[[paths]]\nid = "temp-directory"\npath = "/mine"\n[safety]\nfollow_symlinks = true\n'
    assert 'id = "temp-directory-2"' in migrate_text(source, "/c.toml").new_text


def test_version_2_and_invalid_files_are_left_alone():
    current = 'version = 2\n[workspace]\nroots = ["."]\n'
    assert migrate_text(current, "/c.toml").new_text == current
    assert not migrate_text(current, "/c.toml").changed
    broken = migrate_text("[safety\nallow_any_path = true\n", "/c.toml")
    assert not broken.ok and broken.new_text == "[safety\nallow_any_path = true\n"
    with pytest.raises(ValueError):
        needs_migration("[safety\n")


def test_migrated_file_loads_with_the_same_meaning_and_no_deprecations(home, project):
    before = load_config(str(project.parent))
    assert {d.code for d in before.diagnostics} >= {"deprecated-v1-boolean"}
    project.write_text(migrate_text(V1, str(project)).new_text, encoding="utf-8")
    after = load_config(str(project.parent))

    assert not [d for d in after.diagnostics if "deprecated" in d.tags or d.code.startswith("config-version")]
    old, new = before.config, after.config
    assert new.version == 2 and new.allow_temp_directory is False
    for name in ("roots", "worktrees", "approval_timeout", "mounts", "project_root", "files"):
        assert getattr(new, name) == getattr(old, name), name
    kept = {rule.id: rule for rule in new.paths if rule.id != "temp-directory"}
    assert kept == {rule.id: rule for rule in old.paths}  # follow_symlinks already true under v1
    (temp,) = [rule for rule in new.paths if rule.id == "temp-directory"]
    assert old.allow_temp_directory is True
    assert (temp.anchor, temp.read, temp.write, temp.delete, temp.follow_symlinks) == (
        temp_dir(), "allow", "allow", "allow", True
    )
    assert temp.base_dir is None  # written as an absolute path


def test_migrating_twice_changes_nothing_more():
    once = migrate_text(V1, "/repo/.rootguard.toml").new_text
    assert migrate_text(once, "/repo/.rootguard.toml").new_text == once


# --------------------------------------------------------------------------- command


def test_preview_prints_a_diff_and_changes_nothing(capsys, project):
    code, out, err = run(capsys, str(project))
    assert code == 0
    assert out.startswith(f"--- {project}\n+++ {project} (version 2)\n")
    assert "+version = 2\n" in out and "-[safety]\n" in out
    assert f"configuration file: {project}" in err
    assert "preview only" in err
    assert project.read_text(encoding="utf-8") == V1
    assert not Path(f"{project}.v1.bak").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (V1, 1),
        ('version = 2\n[workspace]\nroots = ["."]\n', 0),
        ("[safety\n", 2),
        ("version = 2\n[safety]\nallow_any_path = true\n", 2),
        ('[workspace]\nroots = "."\n', 2),
    ],
)
def test_check_exit_codes(capsys, project, text, expected):
    project.write_text(text, encoding="utf-8")
    code, out, _ = run(capsys, "--check", str(project))
    assert code == expected
    assert out == ""
    assert project.read_text(encoding="utf-8") == text


def test_check_of_a_missing_file_is_invalid(capsys, tmp_path):
    missing = tmp_path / "nope.toml"
    code, _, err = run(capsys, "--check", str(missing))
    assert code == 2 and f"configuration file not found: {missing}" in err


def test_usage_errors_do_not_look_like_needs_migration(capsys, project):
    code, _, err = run(capsys, "--check", "--write", str(project))
    assert code == 2 and "not allowed with" in err


def test_write_keeps_a_backup_and_mode_and_replaces_atomically(capsys, project):
    original = project.read_bytes()
    inode = project.stat().st_ino
    code, _, err = run(capsys, "--write", str(project))
    assert code == 0
    backup = Path(f"{project}.v1.bak")
    assert backup.read_bytes() == original
    assert f"original kept as {backup}" in err
    assert stat.S_IMODE(project.stat().st_mode) == 0o640
    assert stat.S_IMODE(backup.stat().st_mode) == 0o640
    assert project.stat().st_ino != inode  # a new file renamed over the old one
    assert sorted(p.name for p in project.parent.iterdir()) == [".git", ".rootguard.toml", ".rootguard.toml.v1.bak"]
    text = project.read_text(encoding="utf-8")
    assert text.startswith("version = 2\n") and all(comment in text for comment in KEPT_COMMENTS)
    assert run(capsys, "--check", str(project))[0] == 0
    assert run(capsys, "--write", str(project))[0] == 0  # nothing left to do
    assert backup.read_bytes() == original


def test_write_never_overwrites_a_different_backup(project):
    older = Path(f"{project}.v1.bak")
    older.write_text("# an older backup\n", encoding="utf-8")
    result = write_migration(str(project))
    assert result.backup == f"{project}.v1.bak.1"
    assert older.read_text(encoding="utf-8") == "# an older backup\n"
    assert Path(result.backup).read_text(encoding="utf-8") == V1


def test_write_through_a_symlink_keeps_the_link(tmp_path, project):
    link = tmp_path / "linked.toml"
    link.symlink_to(project)
    result = write_migration(str(link))
    assert result.changed and link.is_symlink()
    assert project.read_text(encoding="utf-8").startswith("version = 2\n")
    assert Path(f"{link}.v1.bak").read_text(encoding="utf-8") == V1


def test_write_refuses_an_invalid_file(capsys, project):
    project.write_text("[safety]\nallow_any_path = maybe\n", encoding="utf-8")
    code, _, err = run(capsys, "--write", str(project))
    assert code == 2 and "invalid TOML" in err
    assert not Path(f"{project}.v1.bak").exists()


def test_default_file_is_the_user_config_never_the_cwd(capsys, home, project, monkeypatch):
    monkeypatch.chdir(project.parent)  # a project file in cwd must not be picked up
    user = Path(user_config_path())
    user.parent.mkdir(parents=True)
    user.write_text("[safety]\nallow_temp_directory = false\nfollow_symlinks = true\n", encoding="utf-8")
    code, out, err = run(capsys, "--check")
    assert code == 1 and f"configuration file: {user}" in err
    code, _, _ = run(capsys, "--write")
    assert code == 0 and user.read_text(encoding="utf-8") == "version = 2\n"
    assert project.read_text(encoding="utf-8") == V1


def test_rootguard_config_chooses_the_default_file(capsys, home, tmp_path, monkeypatch):
    other = tmp_path / "team.toml"
    other.write_text("version = 2\n", encoding="utf-8")
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(other))
    code, _, err = run(capsys, "--check")
    assert code == 0 and f"configuration file: {other}" in err


def test_missing_default_user_file_is_reported(capsys, home):
    code, _, err = run(capsys)
    assert code == 2 and "configuration file not found" in err
    assert os.fspath(Path(user_config_path())) in err
