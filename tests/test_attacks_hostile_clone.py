"""A hostile cloned repository against the text the CLI prints (red-team review).

Each test drives the real command line (``python -m lsp_bridge.cli``) on files a cloned
repository can hold; each failed before its fix (see the commit that added it).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import git, make_repo

TOKEN = "GITHUB_TOKEN=ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n"
# 8-bit CSI (clear screen), OSC 52 (set the clipboard) ended by ST, then a right-to-left
# override that shows "ftp" reversed; plus the other bidi and mark characters.
HOSTILE = ".env.\u009b2J\u009d52;c;aGk=\u009c\u202eftp"
MARKS = "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
RAW = [chr(c) for c in (*range(0x00, 0x0a), *range(0x0b, 0x20), *range(0x7f, 0xa0))] + list(MARKS)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", *args], capture_output=True,
                            text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_c1_and_bidi_characters_in_a_file_name_are_printed_escaped(tmp_path):
    root = make_repo(tmp_path / "shop")
    added = make_repo(tmp_path / "clone")
    (added / HOSTILE).write_text(TOKEN)
    (added / f".env.{MARKS}x").write_text(TOKEN)
    folder = added / f"pkg{HOSTILE}{MARKS}"
    folder.mkdir()
    (folder / ".env").write_text(TOKEN)
    for args in (("inventory", "--root", str(root), "--add", str(added)),
                 ("inventory", "--root", str(root), "--add", str(folder)),
                 ("roots", str(folder)),
                 ("roots", str(root), str(folder)),
                 ("mounts", str(root), str(folder))):
        result = cli(*args)
        out = result.stdout + result.stderr
        raw = sorted({f"U+{ord(c):04X}" for c in out if c in RAW})
        assert not raw, f"{args[0]} printed raw {raw}:\n{out!r}"
        assert "\\x9b2J" in out, out  # the name is there, escaped
        if args[-1] == str(added):
            assert "\\x9b2J\\x9d52;c;aGk=\\x9c\\u202eftp" in out, out
            assert ".env.\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061cx" in out, out


def test_credentials_in_a_fake_git_directory_are_counted(tmp_path):
    root = make_repo(tmp_path / "shop")
    added = make_repo(tmp_path / "clone")
    fake = added / "a" / ".git"  # no HEAD, objects or refs: git would not read it, the agent would
    fake.mkdir(parents=True)
    (fake / ".env").write_text(TOKEN)
    (fake / "config").mkdir()
    (fake / "config" / "credentials.json").write_text('{"token": "ghp_' + "Z" * 36 + '"}\n')
    out = cli("inventory", "--root", str(root), "--add", str(added)).stdout
    assert "a/.git/.env (1)" in out, out
    assert "Git history clone/.git:" in out, out  # the real one is still history
    assert "a/.git:" not in out, out
    data = json.loads(cli("inventory", "--json", "--root", str(root), "--add", str(added)).stdout)
    assert str(fake / ".env") in {c["path"] for c in data["credentials"]}, data
    assert str(fake) not in {g["path"] for g in data["git"]}, data


def test_a_deleted_credential_file_with_a_newline_in_its_name_is_listed(tmp_path):
    root = make_repo(tmp_path / "shop")
    odd, plain = "x\n.env", "old.env"
    added = make_repo(tmp_path / "clone", {odd: TOKEN, plain: TOKEN, "keep\n.env": TOKEN, "README.md": "hi\n"})
    git(added, "rm", "-q", "--", odd, plain)
    git(added, "commit", "-q", "-m", "remove the secrets")
    out = cli("inventory", "--root", str(root), "--add", str(added)).stdout
    line = next(x for x in out.splitlines() if x.startswith("Git history clone/.git"))
    assert "deleted but still in history: " in line, out
    assert "old.env" in line and "x\\x0a.env" in line, out  # escaped, on the one line
    assert "keep" not in line, out  # still in HEAD: not deleted
    data = json.loads(cli("inventory", "--json", "--root", str(root), "--add", str(added)).stdout)
    (history,) = [g for g in data["git"] if g["path"] == str(added / ".git")]
    assert sorted(history["deleted_sensitive"]) == sorted([odd, plain]), history


def test_credential_names_are_matched_whatever_their_case(tmp_path):
    """`.ENV` is `.env` on a case-insensitive file system (macOS, Windows) and holds the same
    kind of values anywhere: credential names are matched without regard to case."""
    root = make_repo(tmp_path / "shop")
    added = make_repo(tmp_path / "clone", {".ENV": TOKEN, "PROD.TFVARS": TOKEN, "Deploy/ID_RSA": TOKEN,
                                           "Deploy/ID_RSA.PUB": TOKEN, "README.md": "hi\n"})
    out = cli("inventory", "--root", str(root), "--add", str(added)).stdout
    line = next((x for x in out.splitlines() if x[:1].isdigit() and " credential" in x), "")
    assert "clone/.ENV (1)" in line and "clone/PROD.TFVARS (1)" in line and "Deploy/ID_RSA (1)" in line, out
    assert "ID_RSA.PUB" not in out, out  # a public key, in any case, is not a credential file
