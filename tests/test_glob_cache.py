"""Kept glob translations: what a process reads back is what pathspec gives, or nothing.

A kept translation that differed from pathspec's would be a rule matching other
files than the configuration says, so each test compares with pathspec itself,
and damaged, foreign or stale files must change nothing but the speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_bridge.core.glob_cache import FILE_NAME, Translations, pathspec_signature, wildmatch
from lsp_bridge.core.globs import GlobError, check_pattern, expand, matches

FORMS = ["*.pem", "**/.env", "**/.env.*", "/a/**", "a/*/b", "[!x]y", "dir/**/x?", "**/secrets/*", "/keys/id_rsa*",
         "x[a-c]", "**/node_modules/.pnpm/*"]
PATHS = ["a.pem", "k/a.pem", ".env", "a/.env.local", "a/b", "a/x/b", "zy", "dir/x1", "dir/q/x1", "secrets/k",
         "a/secrets/k/l", "keys/id_rsa.pub", "xb", "node_modules/.pnpm/react", "deep/node_modules/.pnpm/x"]


def _same_as_pathspec(kept: Translations, form: str) -> None:
    include, regex = kept.translate(form)
    fresh = wildmatch()(form)
    assert include == fresh.include
    assert regex == fresh.regex and regex is not None  # same pattern text, flags and compiled code
    for path in PATHS:
        assert bool(regex.match(path)) == bool(fresh.regex.match(path)), (form, path)


def test_a_second_process_reads_back_pathspecs_own_answers(tmp_path: Path):
    path = str(tmp_path / FILE_NAME)
    first = Translations(path)
    for form in FORMS:
        _same_as_pathspec(first, form)
    first.save()
    kept = json.loads(Path(path).read_text())
    assert set(kept["forms"]) == set(FORMS) and kept["signature"] == pathspec_signature()
    second = Translations(path)
    for form in FORMS:
        _same_as_pathspec(second, form)
    assert second._changed is False  # every answer came from the file


@pytest.mark.parametrize("damage", [
    "not json", "[]", '{"signature": 1, "forms": {}}', "[" * 100_000,
    # the right signature, entries of the wrong shape or type
    "SIG:{\"*.pem\": [true, \"^x$\"]}", "SIG:{\"*.pem\": [1, \"^x$\", 32]}", "SIG:{\"*.pem\": [true, 7, 32]}",
    "SIG:{\"*.pem\": [true, \"^x$\", true]}", "SIG:{\"*.pem\": \"^x$\"}", "SIG:[]",
    # well formed, but no expression the engine takes: pathspec's answer, never an error
    "SIG:{\"*.pem\": [true, \"(\", 32]}", "SIG:{\"*.pem\": [true, \"^x$\", 123456789012345678901234567890]}",
    "SIG:{\"*.pem\": [true, \"^x$\", -1]}",
])
def test_a_damaged_or_foreign_file_changes_nothing_but_the_speed(tmp_path: Path, damage: str):
    path = tmp_path / FILE_NAME
    if damage.startswith("SIG:"):
        damage = json.dumps({"signature": pathspec_signature(), "forms": json.loads(damage[4:])})
    path.write_text(damage)
    kept = Translations(str(path))
    for form in FORMS:
        _same_as_pathspec(kept, form)


def test_another_pathspec_or_interpreter_starts_over(tmp_path: Path):
    path = tmp_path / FILE_NAME
    signature = pathspec_signature()
    assert signature is not None
    for changed in ([*signature[:1], "another interpreter", *signature[2:]],
                    [*signature[:-1], [signature[-1][0], signature[-1][1] + 1, *signature[-1][2:]]]):
        # a foreign file that would make *.pem match everything
        path.write_text(json.dumps({"signature": changed, "forms": {"*.pem": [True, ".", 32]}}))
        _same_as_pathspec(Translations(str(path)), "*.pem")


def test_nothing_is_kept_without_a_file(tmp_path: Path):
    kept = Translations(None)
    _same_as_pathspec(kept, "*.pem")
    kept.save()
    assert list(tmp_path.iterdir()) == []


_GLOB_TEXT = st.text(alphabet="ab*?/[]!.-", min_size=1, max_size=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(form=_GLOB_TEXT)
def test_any_form_reads_back_as_pathspec_translates_it(tmp_path: Path, form: str):
    path = str(tmp_path / "generated.json")
    first = Translations(path)
    try:
        include, regex = first.translate(form)
    except Exception as exc:  # noqa: BLE001 - pathspec refuses it: nothing may be kept for it
        first.save()
        assert form not in Translations(path)._entries, exc
        return
    first.save()
    again = Translations(path)
    assert again.translate(form) == (include, regex)
    if regex is not None:
        assert form in again._entries and again._changed is False


@settings(max_examples=400, deadline=None)
@given(pattern=st.text(alphabet="ab*?/[]!.,}-", min_size=1, max_size=14))
def test_a_pattern_without_braces_is_its_own_only_alternative(pattern: str):
    """``expand`` skips bracex when there is no '{': bracex gives such a pattern back unchanged."""
    import bracex

    try:
        ours = expand(pattern)
    except GlobError:
        return  # refused before any expansion, as before
    assert ours == list(dict.fromkeys(bracex.expand(pattern, limit=256)))


def test_a_configured_check_imports_neither_pathspec_nor_bracex_once_kept(tmp_path: Path):
    """Through the installed command: the second ``rootguard check`` reads the kept translations."""
    home = tmp_path / "home"
    config = home / ".config" / "rootguard"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('version = 2\n[[paths]]\nid = "env"\npath = "/"\n'
                                        'policies = { read = "deny" }\nincludes = ["**/.env", "*.pem"]\n')
    repo = tmp_path / "repo"
    (repo / "a").mkdir(parents=True)
    (repo / "a" / ".env").write_text("K=1\n")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache")}
    script = ("import sys, atexit\n"
              "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
              "from lsp_bridge.cli.start import main\n"
              "sys.exit(main())\n")
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script, "check", "--json", "--root", str(repo), "--op", "read",
                               str(repo / "a" / ".env")], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 1, done.stderr  # deny: the rule's glob matched
        assert json.loads(done.stdout)["rule"] == "env"
        modules = {m.split(".")[0] for m in done.stderr.rsplit("MODULES ", 1)[1].split()}
        runs.append(modules)
    assert "pathspec" in runs[0]  # the first run translated with pathspec, and kept its answers
    assert not {"pathspec", "bracex"} & runs[1], sorted({"pathspec", "bracex"} & runs[1])
    assert (home / ".cache" / "rootguard" / FILE_NAME).is_file()


def test_glob_semantics_are_unchanged_through_kept_translations():
    """The documented examples hold twice: translated, then read back (the process's kept answers)."""
    for pattern, rel, expected in [("*.pem", "keys/id.pem", True), ("special/**", "special", True),
                                   ("src/*.ts", "src/a/b.ts", False), ("{.env,secrets}", "a/.env", True)]:
        for _ in range(2):
            assert matches(pattern, rel) is expected
    check_pattern("**/keys/*.{pem,key}")
