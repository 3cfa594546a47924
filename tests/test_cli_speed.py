"""What a person feels of the short commands: ``roots``, ``check`` and ``inventory`` load no
server, GUI toolkit or HTTP stack, ``roots`` reads links from the package manager's layout
instead of walking the tree, and the grammar lists and names every command.

Speed itself is shown by bench/bench_cli.py; these tests go through the installed
``rootguard`` command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_every_command_is_listed():
    """``--help`` lists every command, a misspelt one names them all, a command's help shows its options."""
    names = ["roots", "check", "inventory", "mounts", "run", "config", "demo", "trace", "probe",
             "lsp", "tray", "mcp", "audit"]
    listing = subprocess.run([ROOTGUARD, "--help"], capture_output=True, text=True, timeout=120).stdout
    for name in names:
        assert f"\n    {name}" in listing, name
    wrong = subprocess.run([ROOTGUARD, "rots", "/x"], capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and all(repr(name) in wrong.stderr for name in names), wrong.stderr
    check = subprocess.run([ROOTGUARD, "check", "--help"], capture_output=True, text=True, timeout=120).stdout
    assert "--op {read,write,delete,rename,metadata}" in check
