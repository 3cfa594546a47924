"""Mount reconciliation (seed 000) on real files, symlinks and MCP configs."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.core.settings import Mount
from lsp_bridge.inventory.mounts import (
    MountSuggestion,
    Reconciliation,
    mounts_from_mcp_configs,
    reconcile,
    strip_jsonc,
    workspace_packages,
)


def write(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def link(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(text, path)
    return path


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """The seed's pnpm workspace: packages/checkout, a sibling ui, a shared store."""
    repo = tmp_path.resolve() / "shop"
    (repo / ".git").mkdir(parents=True)
    write(repo / "pnpm-workspace.yaml", "packages:\n  - packages/*\n")
    write(repo / "package.json")
    write(repo / "tsconfig.base.json", '{\n  // shared options\n  "compilerOptions": {"strict": true},\n}\n')
    store = repo / "node_modules" / ".pnpm"
    write(store / "react@18.3.1" / "node_modules" / "react" / "package.json")
    write(store / "typescript@5.6.3" / "node_modules" / "typescript" / "bin" / "tsc", "")
    write(store / "@tsconfig+node20@20.1.4" / "node_modules" / "@tsconfig" / "node20" / "tsconfig.json")
    write(repo / "packages" / "ui" / "package.json")
    write(repo / "packages" / "tsconfig" / "package.json")
    write(repo / "packages" / "tsconfig" / "strict.json", '{"extends": "./base.json"}')
    write(repo / "packages" / "tsconfig" / "base.json")
    checkout = repo / "packages" / "checkout"
    write(checkout / "package.json")
    write(checkout / "src" / "index.ts", "")
    extends = ["../../tsconfig.base.json", "@shop/tsconfig/strict.json", "@tsconfig/node20/tsconfig.json"]
    write(checkout / "tsconfig.json", json.dumps({"extends": extends}))
    nm = checkout / "node_modules"
    link(nm / "react", "../../../node_modules/.pnpm/react@18.3.1/node_modules/react")
    link(nm / "typescript", "../../../node_modules/.pnpm/typescript@5.6.3/node_modules/typescript")
    link(nm / ".bin" / "tsc", "../typescript/bin/tsc")
    # A scoped package sits one directory deeper: three "..", not two.
    link(nm / "@shop" / "ui", "../../../ui")
    link(nm / "@shop" / "tsconfig", "../../../tsconfig")
    link(nm / "@tsconfig" / "node20", "../../../../node_modules/.pnpm/@tsconfig+node20@20.1.4/node_modules/@tsconfig/node20")
    link(nm / "legacy", str(repo / "packages" / "ui"))
    return repo


def test_pnpm_layout_suggests_the_narrow_mount_set(shop: Path):
    checkout = str(shop / "packages" / "checkout")

    result = reconcile([checkout], [], repo_toplevel=str(shop))

    assert result.suggested == (
        MountSuggestion(checkout, "/workspace/packages/checkout", "rw", "workspace root"),
        MountSuggestion(
            str(shop / "node_modules" / ".pnpm"),
            "/workspace/node_modules/.pnpm",
            "ro",
            "pnpm store, read off the link text of packages/checkout/node_modules/@tsconfig/node20",
        ),
        MountSuggestion(
            str(shop / "packages" / "tsconfig" / "base.json"),
            "/workspace/packages/tsconfig/base.json",
            "ro",
            "tsconfig extends chain: one file, not its directory",
        ),
        MountSuggestion(
            str(shop / "packages" / "tsconfig" / "strict.json"),
            "/workspace/packages/tsconfig/strict.json",
            "ro",
            "tsconfig extends chain: one file, not its directory",
        ),
        MountSuggestion(
            str(shop / "tsconfig.base.json"),
            "/workspace/tsconfig.base.json",
            "ro",
            "tsconfig extends chain: one file, not its directory",
        ),
    )
    assert result.single_files == (
        str(shop / "packages" / "tsconfig" / "base.json"),
        str(shop / "packages" / "tsconfig" / "strict.json"),
        str(shop / "tsconfig.base.json"),
    )
    assert result.first_party == (
        {"link": f"{checkout}/node_modules/@shop/tsconfig", "target": str(shop / "packages" / "tsconfig"), "via": "link"},
        {"link": f"{checkout}/node_modules/@shop/ui", "target": str(shop / "packages" / "ui"), "via": "link"},
    )
    assert [item["link"] for item in result.unrescuable] == [f"{checkout}/node_modules/legacy"]
    assert "absolute link" in result.unrescuable[0]["reason"]
    assert result.roots_without_mount == () and result.mounts_outside_union == ()
    codes = sorted(d.code for d in result.diagnostics)
    assert codes == ["mount-first-party-link", "mount-first-party-link", "mount-unrescuable-link"]


def test_docker_args_mount_root_rw_and_the_rest_ro(shop: Path):
    checkout = str(shop / "packages" / "checkout")

    args = reconcile([checkout], [], repo_toplevel=str(shop)).docker_args()

    assert args == [
        "-v", f"{checkout}:/workspace/packages/checkout:rw",
        "-v", f"{shop}/node_modules/.pnpm:/workspace/node_modules/.pnpm:ro",
        "-v", f"{shop}/packages/tsconfig/base.json:/workspace/packages/tsconfig/base.json:ro",
        "-v", f"{shop}/packages/tsconfig/strict.json:/workspace/packages/tsconfig/strict.json:ro",
        "-v", f"{shop}/tsconfig.base.json:/workspace/tsconfig.base.json:ro",
    ]  # fmt: skip


def test_unchanged_link_text_lands_inside_the_store_mount_in_the_container(shop: Path):
    checkout = shop / "packages" / "checkout"
    result = reconcile([str(checkout)], [])  # toplevel found from .git
    store_target = result.suggested[1].target

    link_dir = posixpath.join(result.suggested[0].target, "node_modules")
    resolved = posixpath.normpath(posixpath.join(link_dir, os.readlink(checkout / "node_modules" / "react")))

    assert resolved == "/workspace/node_modules/.pnpm/react@18.3.1/node_modules/react"
    assert resolved.startswith(store_target + "/")


def test_scan_skips_git_stores_and_deep_node_modules(shop: Path):
    checkout = shop / "packages" / "checkout"
    outside = shop.parent / "elsewhere"
    outside.mkdir()
    link(checkout / ".git" / "hooks" / "x", str(outside))
    link(checkout / "node_modules" / ".pnpm" / "a", str(outside))
    link(checkout / "node_modules" / "real-pkg" / "lib" / "deep", str(outside))
    link(checkout / "src" / "deeply" / "nested" / "shared", "../../../../ui")

    result = reconcile([str(checkout)], [], repo_toplevel=str(shop))

    assert [item["link"] for item in result.unrescuable] == [f"{checkout}/node_modules/legacy"]
    assert {"link": f"{checkout}/src/deeply/nested/shared", "target": str(shop / "packages" / "ui"), "via": "link"} in (
        result.first_party
    )


def test_relative_link_leaving_the_repository_cannot_be_rescued(shop: Path):
    checkout = shop / "packages" / "checkout"
    (shop.parent / "other").mkdir()
    link(checkout / "vendor", "../../../other")

    result = reconcile([str(checkout)], [], repo_toplevel=str(shop))

    item = next(i for i in result.unrescuable if i["link"] == str(checkout / "vendor"))
    assert item["target"] == str(shop.parent / "other")
    assert "leaves the repository" in item["reason"]


def test_store_root_is_mounted_read_only_and_inner_links_need_nothing(shop: Path):
    checkout = str(shop / "packages" / "checkout")
    store = str(shop / "node_modules" / ".pnpm")

    result = reconcile([checkout, store], [], repo_toplevel=str(shop))

    assert result.suggested[:2] == (
        MountSuggestion(checkout, "/workspace/packages/checkout", "rw", "workspace root"),
        MountSuggestion(store, "/workspace/node_modules/.pnpm", "ro", "pnpm store (a root)"),
    )
    assert all(s.target != "/workspace/node_modules/.pnpm" or s.reason.endswith("(a root)") for s in result.suggested)


# ---------------------------------------------------------------- tsconfig extends


def test_extends_chain_relative_and_package_with_tsconfig_field(tmp_path: Path):
    repo = tmp_path.resolve() / "repo"
    (repo / ".git").mkdir(parents=True)
    app = repo / "apps" / "web"
    write(app / "tsconfig.json", '{"extends": "../../configs/app"}')  # ".json" is appended
    write(repo / "configs" / "app.json", '{"extends": "./root.json"}')
    write(repo / "configs" / "root.json", '{"extends": "@tsconfig/node20"}')
    pkg = repo / "node_modules" / "@tsconfig" / "node20"  # hoisted above the root, a real directory
    write(pkg / "package.json", json.dumps({"tsconfig": "tsconfig.node.json"}))
    write(pkg / "tsconfig.node.json")

    result = reconcile([str(app)], [], repo_toplevel=str(repo))

    assert result.single_files == (
        str(repo / "configs" / "app.json"),
        str(repo / "configs" / "root.json"),
        str(pkg / "tsconfig.node.json"),
    )
    assert result.suggested[-1].target == "/workspace/node_modules/@tsconfig/node20/tsconfig.node.json"


def test_symlinked_tsconfig_names_its_target_file_once(tmp_path: Path):
    repo = tmp_path.resolve() / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "configs" / "ts.json")
    link(repo / "apps" / "web" / "tsconfig.json", "../../configs/ts.json")

    result = reconcile([str(repo / "apps" / "web")], [], repo_toplevel=str(repo))

    assert result.single_files == (str(repo / "configs" / "ts.json"),)
    assert result.suggested[-1].target == "/workspace/configs/ts.json"
    assert result.first_party == ()


def test_extends_cycle_stops_with_a_warning(tmp_path: Path):
    repo = tmp_path.resolve() / "repo"
    (repo / ".git").mkdir(parents=True)
    app = repo / "app"
    write(app / "tsconfig.json", '{"extends": "../a.json"}')
    write(repo / "a.json", '{"extends": "./b.json"}')
    write(repo / "b.json", '{"extends": ["./a.json"]}')

    result = reconcile([str(app)], [], repo_toplevel=str(repo))

    assert result.single_files == (str(repo / "a.json"), str(repo / "b.json"))
    assert [d.code for d in result.diagnostics] == ["tsconfig-extends-cycle"]


def test_missing_extends_target_is_reported(tmp_path: Path):
    repo = tmp_path.resolve() / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "app" / "tsconfig.json", '{"extends": ["../gone.json", "@nope/config"]}')

    result = reconcile([str(repo / "app")], [], repo_toplevel=str(repo))

    assert result.single_files == ()
    assert [d.code for d in result.diagnostics] == ["tsconfig-extends-missing"] * 2


# ---------------------------------------------------------------- MCP configs

VSCODE_MCP = """\
// Servers for this workspace; "http://example.invalid" must survive.
{
  "servers": {
    /* the indexer, confined */
    "code-index": {
      "command": "docker",
      "args": [
        "run", "--rm", "-i", "--network", "none", "--user", "1000:1000",
        "-v", "${workspaceFolder}:/workspace/packages/checkout:rw",
        "--mount", "type=bind,source=${workspaceFolder}/../../node_modules/.pnpm,target=/workspace/node_modules/.pnpm,readonly",
        "-v", "${foo}/secrets:/workspace/secrets:ro",
        "--volume=${workspaceFolder}${pathSeparator}src:/src:ro,z",
        "-v", "cache-volume:/cache",
        "-w", "/workspace/packages/checkout",
        "code-index:1.7.2",
        "-v", "/etc:/host-etc", // container arguments, not docker's
      ],
    },
    "notes": {"command": "node", "args": ["run", "-v", "/:/root"], "url": "http://example.invalid//x"},
  },
}
"""


def test_vscode_mcp_json_with_comments_yields_the_docker_mounts(shop: Path):
    checkout = shop / "packages" / "checkout"
    config = write(checkout / ".vscode" / "mcp.json", VSCODE_MCP)

    mounts, diagnostics = mounts_from_mcp_configs(str(checkout), {})

    origin = ".vscode/mcp.json servers.code-index"
    assert mounts == [
        Mount(str(checkout), "/workspace/packages/checkout", "rw", origin, str(config)),
        Mount(str(shop / "node_modules" / ".pnpm"), "/workspace/node_modules/.pnpm", "ro", origin, str(config)),
        Mount(str(checkout / "src"), "/src", "ro", origin, str(config)),
    ]
    [error] = diagnostics
    assert error.severity == "error" and error.code == "mount-unresolved"
    assert error.file == str(config)
    assert "servers.code-index.args[12]" in error.message and "${foo}" in error.message
    assert error.range is not None and error.range.start_line == 10  # the line holding "${foo}/secrets:..."


def test_env_and_named_folder_variables(tmp_path: Path):
    folder = tmp_path.resolve() / "app"
    other = tmp_path.resolve() / "lib"
    (folder / ".vscode").mkdir(parents=True)
    other.mkdir()
    args = [
        "run",
        "-v", "${env:DATA}:/data:ro",
        "-v", "${workspaceFolder:lib}:/lib",
        "-v", "${userHome}/cache:/cache",
        "-v", "${env:MISSING}/x:/x",
        "-v", "${workspaceFolder:nope}:/nope",
        "img",
    ]  # fmt: skip
    server = {"servers": {"box": {"command": "/usr/local/bin/podman", "args": args}}}
    write(folder / ".vscode" / "mcp.json", json.dumps(server))
    home = tmp_path.resolve() / "home"
    (home / "cache").mkdir(parents=True)

    mounts, diagnostics = mounts_from_mcp_configs(
        str(folder), {"DATA": str(other), "HOME": str(home)}, workspace_folders=[str(other)]
    )

    assert [(m.source, m.target, m.mode) for m in mounts] == [
        (str(other), "/data", "ro"),
        (str(other), "/lib", "rw"),
        (str(home / "cache"), "/cache", "rw"),
    ]
    messages = [d.message for d in diagnostics]
    assert len(messages) == 2 and all(d.severity == "error" for d in diagnostics)
    assert "servers.box.args[8]" in messages[0] and "MISSING is not set" in messages[0]
    assert "servers.box.args[10]" in messages[1] and "nope" in messages[1]


def test_claude_mcp_json_uses_env_expansion_and_strict_json(tmp_path: Path):
    folder = tmp_path.resolve() / "proj"
    (folder / "data").mkdir(parents=True)
    args = ["run", "-v", "${ROOT:-.}/data:/data", "-v", "${workspaceFolder}:/w", "img"]
    write(folder / ".mcp.json", json.dumps({"mcpServers": {"idx": {"command": "docker", "args": args}}}))
    write(folder / ".cursor" / "mcp.json", '{"mcpServers": {} // comments are not JSON here\n}')

    mounts, diagnostics = mounts_from_mcp_configs(str(folder), {})

    assert [(m.source, m.target, m.origin) for m in mounts] == [(str(folder / "data"), "/data", ".mcp.json mcpServers.idx")]
    codes = [(d.code, Path(d.file).name) for d in diagnostics]
    assert codes == [("mount-source", ".mcp.json"), ("mount-unresolved", ".mcp.json"), ("mcp-config-invalid", "mcp.json")]
    assert "relative source" in diagnostics[0].message
    assert "mcpServers.idx.args[4]" in diagnostics[1].message
    assert diagnostics[2].range is not None


def test_strip_jsonc_keeps_strings_and_positions():
    text = '{"a": "x // y /* z */", /* c */ "b": [1, 2,], // t\n "c": "\\"",}'

    stripped = strip_jsonc(text)

    assert json.loads(stripped) == {"a": "x // y /* z */", "b": [1, 2], "c": '"'}
    assert len(stripped) == len(text) and stripped.index('"c"') == text.index('"c"')
    with pytest.raises(json.JSONDecodeError):
        strip_jsonc('{"a": 1 /* never closed')


# ---------------------------------------------------------------- both directions


def test_roots_without_mount_and_mounts_outside_union(shop: Path):
    checkout = str(shop / "packages" / "checkout")
    ui = str(shop / "packages" / "ui")
    mounts = [
        Mount(checkout, "/workspace/packages/checkout", "rw", "config"),
        Mount(str(shop), "/workspace", "ro", ".mcp.json mcpServers.idx", str(shop / ".mcp.json")),
    ]

    result = reconcile([checkout, ui], mounts[:1], repo_toplevel=str(shop))
    assert result.roots_without_mount == (ui,)
    assert result.mounts_outside_union == ()

    result = reconcile([checkout], mounts, repo_toplevel=str(shop))
    assert result.roots_without_mount == ()
    assert result.mounts_outside_union == (mounts[1],)
    [warning] = [d for d in result.diagnostics if d.code == "mount-outside-union"]
    assert str(shop) in warning.message and warning.file == str(shop / ".mcp.json")


def test_no_mounts_means_no_roots_without_mount(shop: Path):
    result = reconcile([str(shop / "packages" / "ui")], [], repo_toplevel=str(shop))

    assert result.roots_without_mount == ()
    assert not [d for d in result.diagnostics if d.code == "root-without-mount"]


def test_to_json_matches_the_status_mounts_object(shop: Path):
    checkout = str(shop / "packages" / "checkout")
    wide = Mount(str(shop), "/workspace", "rw", "config")

    data = reconcile([checkout], [wide], repo_toplevel=str(shop)).to_json()

    assert set(data) == {
        "mounts", "roots_without_mount", "mounts_outside_union", "suggested", "suggested_for",
        "docker_args", "unrescuable", "first_party", "single_files", "refused", "held",
    }  # fmt: skip
    assert data["mounts"] == [{"source": str(shop), "target": "/workspace", "mode": "rw", "origin": "config"}]
    assert data["mounts_outside_union"] == [{"source": str(shop), "target": "/workspace"}]
    assert data["docker_args"][:2] == ["-v", f"{checkout}:/workspace/packages/checkout:rw"]
    assert set(data["suggested"][0]) == {"source", "target", "mode", "reason", "beyond_acknowledged", "kind", "cause"}
    assert data["suggested_for"] == [checkout]
    assert set(data["unrescuable"][0]) == {"link", "target", "reason"}
    assert set(data["first_party"][0]) == {"link", "target", "via"}
    json.dumps(data)


def test_colon_in_a_path_uses_mount_syntax():
    result = Reconciliation(suggested=(MountSuggestion("/srv/a:b,c", "/workspace/a:b,c", "ro", "x"),))

    assert result.docker_args() == ["--mount", 'type=bind,"source=/srv/a:b,c","target=/workspace/a:b,c",readonly']


def test_roots_from_two_repositories_get_one_directory_each(tmp_path: Path):
    base = tmp_path.resolve()
    for name in ("api", "web"):
        (base / name / ".git").mkdir(parents=True)
        (base / name / "src").mkdir()

    result = reconcile([str(base / "api" / "src"), str(base / "web")], [])

    assert [(s.source, s.target) for s in result.suggested] == [
        (str(base / "api" / "src"), "/workspace/api/src"),
        (str(base / "web"), "/workspace/web"),
    ]


# ---------------------------------------------------------------- MCP servers under rootguard run


def test_wrapped_servers_match_the_union_and_unconfined_ones_are_warned_about(shop: Path):
    from lsp_bridge.inventory.mounts import mcp_server_confinement

    checkout = shop / "packages" / "checkout"
    config = write(checkout / ".vscode" / "mcp.json", """{
  // stdio servers
  "servers": {
    "confined": {"command": "rootguard", "args": ["run", "--root", "${workspaceFolder}", "--", "npx", "srv"]},
    "too-wide": {"command": "/usr/local/bin/rootguard", "args": ["run", "--root", "${workspaceFolder}/../..", "--", "srv"]},
    "bare": {"command": "npx", "args": ["-y", "@acme/fs-server"]},
    "guarded": {"command": "rootguard", "args": ["mcp", "--root", "${workspaceFolder}"]},
    "remote": {"type": "http", "url": "https://example.invalid/mcp"},
  },
}""")
    write(checkout / ".mcp.json", json.dumps({"mcpServers": {"claude-side": {"command": "uvx", "args": ["srv"]}}}))

    found = mcp_server_confinement(str(checkout), {}, [str(checkout)])

    by_code = {}
    for d in found:
        by_code.setdefault(d.code, []).append(d)
    [confined] = by_code["mcp-server-confined"]
    assert confined.severity == "information" and "servers.confined" in confined.message
    [wide] = by_code["mcp-server-confined-wider"]
    assert wide.severity == "warning" and str(shop) in wide.message and wide.file == str(config)
    unconfined = by_code["mcp-server-unconfined"]
    assert [d.message.split(" runs")[0] for d in unconfined] == [
        ".vscode/mcp.json servers.bare", ".mcp.json mcpServers.claude-side"]
    assert all("rootguard run" in d.message for d in unconfined)
    assert unconfined[0].range is not None and unconfined[0].range.start_line == 5
    assert len(found) == 4  # the guarded server and the remote one say nothing


def test_an_mcp_config_nested_past_the_parsers_depth_is_an_error_naming_it(tmp_path: Path):
    """A repository's own ``.mcp.json`` is attacker-shaped input: refused with its name, never a crash."""
    folder = tmp_path.resolve() / "proj"
    folder.mkdir()
    write(folder / ".mcp.json", '{"mcpServers": ' + "[" * 100_000)

    mounts, diagnostics = mounts_from_mcp_configs(str(folder), {})

    assert mounts == []
    assert [(d.code, d.severity, Path(d.file).name) for d in diagnostics] == [("mcp-config-invalid", "error", ".mcp.json")]
    assert "nested too deep" in diagnostics[0].message
    shown = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "roots", str(folder)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "internal error" not in shown.stderr
    assert f"{folder / '.mcp.json'}: invalid JSON: nested too deep" in shown.stdout


@pytest.mark.parametrize("name", [".mcp.json", "tsconfig.json"])
def test_a_number_past_the_digit_limit_is_invalid_json_naming_the_file(tmp_path: Path, name):
    """Python refuses to read an integer of more than 4,300 digits (a ``ValueError`` that is no
    ``JSONDecodeError``): the file's own "invalid JSON" message, never an internal error."""
    folder = tmp_path.resolve() / "proj"
    folder.mkdir()
    write(folder / name, '{"mcpServers": {}, "compilerOptions": {"x": ' + "9" * 5000 + "}}")
    for command in ("roots", "mounts"):
        shown = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", command, str(folder)],
                               capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0 and "internal error" not in shown.stderr, shown.stderr
    assert f"{folder / name}: invalid JSON: Exceeds the limit (4300 digits)" in shown.stdout


def test_an_mcp_config_that_is_a_fifo_is_an_error_naming_it_not_a_wait(tmp_path: Path):
    """A repository can ship ``.vscode/mcp.json`` as a FIFO: opening it would wait for a writer forever."""
    folder = tmp_path.resolve() / "proj"
    (folder / ".vscode").mkdir(parents=True)
    os.mkfifo(folder / ".vscode" / "mcp.json")
    shown = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "roots", str(folder)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert f"{folder / '.vscode' / 'mcp.json'}: cannot read: not a readable regular file" in shown.stdout


@pytest.mark.parametrize("fifo", [".git", "pnpm-workspace.yaml"])
def test_a_fifo_a_repository_ships_where_roots_and_check_read_is_not_waited_on(tmp_path: Path, fifo):
    """A folder's ``.git`` (read for the linked worktree it points at) or the repository's
    ``pnpm-workspace.yaml`` as a FIFO: a plain open waits for a writer forever."""
    folder = tmp_path.resolve() / "repo" / "app"
    folder.mkdir(parents=True)
    os.mkfifo((folder if fifo == ".git" else folder.parent) / fifo)
    for command in (["roots", str(folder)], ["check", "--root", str(folder), "--op", "read", str(folder / "x")]):
        shown = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", *command],
                               capture_output=True, text=True, timeout=60)
        assert "internal error" not in shown.stderr
        assert shown.returncode == 0, (command, shown.stderr)


@pytest.mark.timeout(60)
@pytest.mark.skipif(not os.path.exists("/proc/kmsg") or os.geteuid() != 0, reason="/proc/kmsg is readable by root only")
def test_a_tsconfig_extending_a_kernel_interface_never_hangs_a_command(tmp_path):
    """``/proc/kmsg`` looks like a regular file and a read of it waits for the next kernel message:
    a repository's ``tsconfig.json`` that extends it once hung ``roots``, ``mounts`` and ``run``.
    Kernel interface files are refused as configuration files, and nothing is ever read blocking."""
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo", {"packages/app/tsconfig.json": '{"extends": "/proc/kmsg"}\n'})
    for command in (["roots", "--json"], ["mounts", "--json"]):
        done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", *command, str(repo / "packages" / "app")],
                              capture_output=True, text=True, timeout=30,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        assert done.returncode in (0, 2), done.stderr
        answer = json.loads(done.stdout)
        mounts = answer["mounts"] if command[0] == "roots" else answer
        assert "/proc/kmsg" not in json.dumps(mounts["suggested"]) + json.dumps(mounts["single_files"])


def test_a_pnpm_workspace_flow_list_over_several_lines_names_every_package(tmp_path: Path):
    """``pnpm-workspace.yaml`` is read with PyYAML's ``safe_load``: a flow list written over several
    lines (the subset reader it replaces read it as ``[]``) names every package, and a comment
    inside it does not count."""
    for name in ("packages/a", "packages/b", "apps/web", "tools/x"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "pnpm-workspace.yaml").write_text(
        "packages: [\n  'packages/*',  # libraries\n  \"apps/*\",\n  '!packages/b'\n]\ncatalog:\n  react: ^19\n")
    found = workspace_packages(str(tmp_path), [10_000])
    assert sorted(os.path.relpath(p, tmp_path) for p in found) == ["apps/web", "packages/a"]


def test_a_pnpm_workspace_that_is_not_yaml_names_no_package(tmp_path: Path):
    (tmp_path / "packages" / "a").mkdir(parents=True)
    (tmp_path / "pnpm-workspace.yaml").write_text("packages: [unclosed\n")
    assert workspace_packages(str(tmp_path), [10_000]) == []
