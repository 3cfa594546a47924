"""'Always allow' writes a [[paths]] rule to the user file, and only there."""

import os
import stat

import pytest
import tomlkit

from lsp_bridge.core.config import parse_file
from lsp_bridge.core.grants import GrantError, write_always_rule

USER_TEXT = """\
# My Root Guard settings — keep this comment
version = 2

[approvals]
timeout_seconds = 45   # I read slowly

[[paths]]
id = "pnpm-store"      # shared store
path = "/opt/pnpm"
policies = { read = "allow", write = "deny" }

# mounts for the dev container
[[mounts]]
source = "/opt/pnpm"
target = "/workspace/node_modules/.pnpm"
mode = "ro"
"""


@pytest.fixture
def user_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "rootguard" / "config.toml"
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(path))
    return path


def rules_of(path):
    return tomlkit.parse(path.read_text()).unwrap()["paths"]


def test_the_users_comments_and_formatting_survive_and_the_file_is_0600(user_file, tmp_path):
    user_file.parent.mkdir(parents=True)
    user_file.write_text(USER_TEXT)
    os.chmod(user_file, 0o644)
    target = tmp_path / "repo" / ".env"
    rule_id = write_always_rule(str(user_file), {"path": str(target), "policies": {"write": "allow", "delete": "request"}})
    text = user_file.read_text()
    assert text.startswith(USER_TEXT)  # every byte the user wrote is still there
    assert "# My Root Guard settings — keep this comment" in text and "# I read slowly" in text
    assert stat.S_IMODE(os.stat(user_file).st_mode) == 0o600
    assert rules_of(user_file)[-1] == {"id": rule_id, "path": str(target), "policies": {"write": "allow", "delete": "request"}}
    parsed = parse_file(str(user_file), source="user", base_dir=None)
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    assert [r.id for r in parsed.layer.paths] == ["pnpm-store", rule_id]
    assert not [p for p in user_file.parent.iterdir() if p.name != "config.toml"]  # no temp file left


def test_a_missing_user_file_is_created_as_version_2(user_file, tmp_path):
    rule_id = write_always_rule(str(user_file), {"path": str(tmp_path / "notes.md"), "policies": {"read": "allow"}})
    document = tomlkit.parse(user_file.read_text()).unwrap()
    assert document["version"] == 2
    assert document["paths"] == [{"id": rule_id, "path": str(tmp_path / "notes.md"), "policies": {"read": "allow"}}]
    assert stat.S_IMODE(os.stat(user_file).st_mode) == 0o600


def test_the_same_grant_twice_writes_one_rule(user_file, tmp_path):
    fields = {"path": str(tmp_path / "a"), "policies": {"delete": "allow"}}
    assert write_always_rule(str(user_file), fields) == write_always_rule(str(user_file), fields)
    assert len(rules_of(user_file)) == 1


def test_a_project_file_or_any_other_file_is_refused(user_file, tmp_path):
    project = tmp_path / "repo" / ".rootguard.toml"
    project.parent.mkdir()
    project.write_text("version = 2\n")
    for other in (project, tmp_path / "elsewhere.toml"):
        with pytest.raises(GrantError, match="only to the user configuration"):
            write_always_rule(str(other), {"path": "/x", "policies": {"read": "allow"}})
    assert project.read_text() == "version = 2\n"
    assert not (tmp_path / "elsewhere.toml").exists()


def test_a_symlinked_user_file_keeps_its_link(user_file, tmp_path):
    dotfiles = tmp_path / "dotfiles" / "rootguard.toml"
    dotfiles.parent.mkdir()
    dotfiles.write_text(USER_TEXT)
    user_file.parent.mkdir(parents=True)
    user_file.symlink_to(dotfiles)
    write_always_rule(str(user_file), {"path": "/srv/data", "policies": {"read": "allow"}})
    assert user_file.is_symlink()
    assert dotfiles.read_text().startswith(USER_TEXT) and "/srv/data" in dotfiles.read_text()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"path": "relative", "policies": {"read": "allow"}}, "'path'"),
        ({"path": "/x", "policies": {}}, "'policies'"),
        ({"path": "/x", "policies": {"execute": "allow"}}, "policies.execute"),
        ({"path": "/x", "policies": {"read": "yes"}}, "policies.read"),
        ({"path": "/x", "policies": {"read": "allow"}, "mode": "rw"}, "unknown rule field"),
        ({"path": "/x", "policies": {"read": "allow"}, "comment": "two\nlines"}, "one line"),
    ],
)
def test_bad_rule_fields_are_refused_before_anything_is_written(user_file, fields, message):
    with pytest.raises(GrantError, match=message):
        write_always_rule(str(user_file), fields)
    assert not user_file.exists()


def test_a_broken_user_file_is_never_overwritten(user_file):
    user_file.parent.mkdir(parents=True)
    user_file.write_text("version = 2\n[[paths]\nbroken")
    with pytest.raises(GrantError, match="invalid TOML"):
        write_always_rule(str(user_file), {"path": "/x", "policies": {"read": "allow"}})
    assert user_file.read_text() == "version = 2\n[[paths]\nbroken"
    user_file.write_text("version = 2\npaths = []\n")
    with pytest.raises(GrantError, match="not an array of tables"):
        write_always_rule(str(user_file), {"path": "/x", "policies": {"read": "allow"}})
