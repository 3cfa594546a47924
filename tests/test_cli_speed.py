"""What makes the short commands short: each imports only what it uses, and ``roots``
reads links from the package manager's layout instead of walking the tree.

Speed itself is shown by bench/bench_cli.py; these tests pin the behaviour the speed
rests on, through the installed ``rootguard`` command.
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

from lsp_bridge.inventory.mounts import reconcile, workspace_packages
from tests.conftest import make_repo

ROOTGUARD = str(Path(sys.executable).with_name("rootguard"))  # the installed command

# Never on the path of roots / check / inventory (the language server's, the MCP server's, the HTTP stack).
HEAVY = ("pygls", "lsprotocol", "mcp", "tomlkit", "detect_secrets", "requests", "urllib3", "watchdog",
         "PySide6", "pydantic", "rich")
# PyYAML is not among them: roots reads the repository's pnpm-workspace.yaml with it (a real YAML reader).


def modules_after(args: list[str], env: dict[str, str]) -> set[str]:
    """The modules a real ``rootguard ARGS`` process had imported when it finished."""
    script = (
        "import sys, atexit\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
        "sys.argv = ['rootguard', *sys.argv[1:]]\n"
        f"exec(compile(open({ROOTGUARD!r}).read(), {ROOTGUARD!r}, 'exec'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    assert "Traceback" not in done.stderr, done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")][-1]
    return {name.split(".")[0] for name in line[len("MODULES "):].split()}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A pnpm workspace: packages linking a library outside ``packages/``, a store, a link deep in the sources."""
    root = make_repo(tmp_path / "shop", {
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'   # the packages\n  - \"!packages/skipped\"\n",
        "package.json": "{}\n",
        "packages/checkout/package.json": "{}\n",
        "libs/ui/package.json": "{}\n",
        "packages/skipped/package.json": "{}\n",
        "node_modules/.pnpm/react@18.3.1/node_modules/react/package.json": "{}\n",
        "README.md": "shop\n",
    })
    modules = root / "packages/checkout/node_modules"
    (modules / "@shop").mkdir(parents=True)
    os.symlink("../../../../libs/ui", modules / "@shop" / "ui")
    os.symlink("../../../node_modules/.pnpm/react@18.3.1/node_modules/react", modules / "react")
    (root / "packages/skipped/node_modules").mkdir()
    os.symlink("../../../libs/ui", root / "packages/skipped/node_modules/ui")
    deep = root / "packages/checkout/src/deeply/nested"
    deep.mkdir(parents=True)
    os.symlink("../../../../../libs/ui", deep / "shared")
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.mark.parametrize("command", ["roots", "check", "inventory"])
def test_short_commands_import_nothing_heavy(shop: Path, tmp_path: Path, command: str):
    args = {
        "roots": ["roots", str(shop)],
        "check": ["check", "--root", str(shop), "--op", "read", str(shop / "README.md")],
        "inventory": ["inventory", "--root", str(shop / "packages/checkout"), "--add", str(shop)],
    }[command]
    loaded = modules_after(args, _env(tmp_path) if command != "inventory" else {})
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    if command in ("roots", "check"):  # the plain spelling: read without argparse (main.plain_arguments)
        assert "argparse" not in loaded and "gettext" not in loaded


def test_roots_reads_links_from_the_workspace_layout_and_mounts_walks(shop: Path, tmp_path: Path):
    env = {**os.environ, **_env(tmp_path)}
    roots = json.loads(subprocess.run([ROOTGUARD, "roots", "--json", str(shop / "packages")], capture_output=True,
                                      text=True, timeout=120, env=env, check=True).stdout)
    mounts = json.loads(subprocess.run([ROOTGUARD, "mounts", "--json", str(shop / "packages")], capture_output=True,
                                       text=True, timeout=120, env=env, check=True).stdout)
    from_layout = {item["link"] for item in roots["mounts"]["first_party"]}
    walked = {item["link"] for item in mounts["first_party"]}
    checkout = shop / "packages/checkout"
    # A workspace package's node_modules link to first-party code outside the union: found by both.
    assert str(checkout / "node_modules/@shop/ui") in from_layout
    # The store, read off the link text of react: suggested by both.
    assert [s["source"] for s in roots["mounts"]["suggested"]] == [s["source"] for s in mounts["suggested"]]
    assert str(shop / "node_modules/.pnpm") in [s["source"] for s in roots["mounts"]["suggested"]]
    # A link deep in the sources, and one in a package the workspace excludes: only the walk finds them.
    assert str(checkout / "src/deeply/nested/shared") in walked - from_layout
    assert str(shop / "packages/skipped/node_modules/ui") in walked - from_layout


def test_reconcile_without_walk_finds_the_layout_links_of_a_narrow_root(shop: Path):
    checkout = str(shop / "packages/checkout")
    walked = reconcile([checkout], [], repo_toplevel=str(shop))
    layout = reconcile([checkout], [], repo_toplevel=str(shop), walk=False)
    assert layout.suggested == walked.suggested
    assert [i["link"] for i in layout.first_party] == [f"{checkout}/node_modules/@shop/ui"]
    assert {i["link"] for i in walked.first_party} == {f"{checkout}/node_modules/@shop/ui",
                                                        f"{checkout}/src/deeply/nested/shared"}


@pytest.mark.parametrize(("files", "expected"), [
    ({"pnpm-workspace.yaml": "packages:\n  - packages/*\n  - 'apps/**'\n  - \"!apps/old\"\n"},
     ["apps", "apps/new", "apps/new/inner", "packages/a", "packages/b"]),
    ({"pnpm-workspace.yaml": "packages: [packages/a, 'apps/new']\ncatalog:\n  - not-a-package\n"},
     ["packages/a", "apps/new"]),
    ({"package.json": json.dumps({"workspaces": ["packages/*", "!packages/b"]})}, ["packages/a"]),
    ({"package.json": json.dumps({"workspaces": {"packages": ["apps/*"]}})}, ["apps/new", "apps/old"]),
    ({"package.json": "{}"}, []),
])
def test_workspace_packages_follow_the_manifest(tmp_path: Path, files: dict[str, str], expected: list[str]):
    for name in ("packages/a", "packages/b", "apps/new/inner", "apps/old", "apps/new/node_modules/x", "apps/.hidden"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = workspace_packages(str(tmp_path), [10_000])
    assert sorted(os.path.relpath(p, tmp_path) for p in found) == sorted(expected)


@pytest.mark.parametrize("argv", [
    ["roots", "a"], ["roots", "/srv/a", "b c", "x=y", "@file", "", " "], ["roots", "a\x00b", "é"],
    ["check", "--root", "r", "--op", "read", "p"], ["check", "p", "--root", "r", "--op", "write", "--json"],
    ["check", "--root", "r", "--json", "--root", "", "--op", "rename", "a", "b"],
    ["check", "a", "b", "--op", "rename", "--root", "r", "--json", "--json"],
    ["check", "--op", "metadata", "--root", "r", "", "--root", "s"], ["check", "--root", "r", "--op", "delete", "x=y"],
])
def test_plain_spellings_are_read_as_the_grammar_reads_them(argv: list[str]):
    from lsp_bridge.cli import grammar
    from lsp_bridge.cli.main import plain_arguments

    plain, parsed = plain_arguments(argv), grammar.parse(argv)
    assert plain is not None and parsed is not None
    assert vars(plain) == vars(parsed)


_WORDS = ["read", "rename", "write", "copy", "a", "b", "", " ", "x=y", "-", "-1", "-x", "--", "--json", "--root",
          "--ro", "--root=a", "--op=read", "-h", "check"]
_VALUES = st.sampled_from(_WORDS)


@st.composite
def _check_words(draw) -> list[str]:
    """``check`` words: a plain spelling shuffled, then perhaps something changed in it."""
    plain_words = st.sampled_from(["r", "a", "", "x y", "x=y", "read"])
    pieces = [["--root", draw(plain_words)], ["--op", draw(st.sampled_from(["read", "rename", "write"]))],
              draw(st.lists(plain_words, min_size=1, max_size=2))]  # PATH [DEST], side by side
    if draw(st.booleans()):
        pieces.append(["--root", draw(plain_words)])
    if draw(st.booleans()):
        pieces.append(["--json"])
    words = [word for piece in draw(st.permutations(pieces)) for word in piece]
    if draw(st.booleans()):  # a word anywhere: a bad value, a lone option, another operand, a missing one
        change = draw(st.sampled_from(["insert", "replace", "delete"]))
        at = draw(st.integers(0, len(words) - (change != "insert")))
        if change == "delete":
            del words[at]
        else:
            words[at:at + (change == "replace")] = [draw(_VALUES)]
    return words


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argv=st.one_of(st.lists(_VALUES, max_size=5).map(lambda rest: ["roots", *rest]),
                     _check_words().map(lambda rest: ["check", *rest])))
def test_no_spelling_is_read_apart_from_the_grammar(argv: list[str]):
    """Whatever the words, the plain reading is argparse's reading, or there is none (argparse then reads it)."""
    import contextlib
    import io

    from lsp_bridge.cli import grammar
    from lsp_bridge.cli.main import plain_arguments

    plain = plain_arguments(argv)
    if plain is None:
        return
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            parsed = grammar.parse(argv)
        except SystemExit:
            pytest.fail(f"read plainly, but argparse refuses {argv}: {err.getvalue()}")
    assert parsed is not None and vars(plain) == vars(parsed), argv


@pytest.mark.parametrize("name", ["run", "trace", "probe"])
def test_a_command_operand_is_not_the_subcommand(name: str):
    """``run``, ``trace`` and ``probe`` take a COMMAND operand; the grammar names the subcommand apart."""
    from lsp_bridge.cli import grammar

    args = grammar.parse([name, "--", "echo", "hi"])
    assert args is not None and args.subcommand == name and list(args.command)[-2:] == ["echo", "hi"]


@pytest.mark.parametrize("argv", [[], ["config"]])
def test_no_command_to_run_is_the_help(argv: list[str], capsys: pytest.CaptureFixture[str]):
    from lsp_bridge.cli import grammar

    assert grammar.parse(argv) is None
    assert "usage: rootguard" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    [], ["roots"], ["roots", "--json", "a"], ["roots", "a", "--json"], ["roots", "--", "a"], ["roots", "-"],
    ["roots", "-h"], ["roots", "-1"], ["check", "a"], ["mounts", "a"], ["--version"], ["rots", "a"],
    ["check", "--root", "r", "--op", "read"], ["check", "--root", "r", "p"], ["check", "--op", "read", "p"],
    ["check", "--root=r", "--op", "read", "p"], ["check", "--root", "r", "--op", "read", "p", "--", "q"],
    ["check", "--root", "-r", "--op", "read", "p"], ["check", "--root", "r", "--op", "copy", "p"],
    ["check", "--root", "r", "--op", "read", "--op", "write", "p"], ["check", "--ro", "r", "--op", "read", "p"],
    ["check", "a", "--root", "r", "--op", "rename", "b"], ["check", "--root", "r", "--op", "read", "a", "b", "c"],
    ["check", "--root", "r", "--op", "read", "p", "--help"], ["check", "--root", "r", "--op"],
])
def test_everything_else_goes_to_the_grammar(argv: list[str]):
    from lsp_bridge.cli.main import plain_arguments

    assert plain_arguments(argv) is None


def test_every_command_is_listed_though_only_the_one_run_is_built():
    """``main`` builds the options of the command being run only; the others stay registered."""
    names = ["roots", "check", "inventory", "mounts", "run", "config", "demo", "trace", "probe",
             "lsp", "tray", "mcp", "audit"]
    listing = subprocess.run([ROOTGUARD, "--help"], capture_output=True, text=True, timeout=120).stdout
    for name in names:
        assert f"\n    {name}" in listing, name
    wrong = subprocess.run([ROOTGUARD, "rots", "/x"], capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and all(repr(name) in wrong.stderr for name in names), wrong.stderr
    check = subprocess.run([ROOTGUARD, "check", "--help"], capture_output=True, text=True, timeout=120).stdout
    assert "--op {read,write,delete,rename,metadata}" in check


def test_main_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Start-up runs with the collector paused (cli/start.py); a caller of ``main`` gets it back."""
    import gc

    from lsp_bridge.cli.main import main

    folder = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    for argv in (["check", "--root", str(folder), "--op", "read", str(folder / "README.md")],
                 ["roots", str(folder)], ["inventory", "--root", str(folder), "--add", str(folder)],
                 ["check", "--root", str(folder), "--op", "read", ""]):
        assert main(argv) in (0, 2)
        assert gc.isenabled() and gc.get_freeze_count() == 0, argv
    with pytest.raises(SystemExit):
        main(["check"])  # a usage error leaves through argparse's exit
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        assert main(["roots", str(folder)]) == 0
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
    capsys.readouterr()
