"""The suggested mount set, run: a sandbox made only of those mounts lets Node resolve what the root needs.

A pnpm-style monorepo with the three layouts real repositories have (vite's
``packages/vite/src/node`` below its package's own ``node_modules``; a
``tsconfig`` whose ``types`` resolve from the repository's ``node_modules``; a
store entry linking back into a first-party package). ``rootguard mounts
--json`` (the installed command) suggests the mounts; bubblewrap builds a file
system of nothing else (plus the system's ``/usr`` for ``node``); Node resolves
inside it. A control run without the package-level mount shows the gap is real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git

pytestmark = pytest.mark.skipif(not (shutil.which("bwrap") and shutil.which("node")),
                                reason="needs bubblewrap and node (scripts/bootstrap.sh --test installs them)")

ROOTGUARD = str(Path(sys.executable).with_name("rootguard"))
STORE = "node_modules/.pnpm"
LEGACY = "plugin-legacy@1.0.0_vite@packages+vite"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def link(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(text)


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    repo = tmp_path / "vite"
    write(repo / "package.json", '{"name": "monorepo", "private": true}\n')
    write(repo / "pnpm-workspace.yaml", "packages:\n  - packages/*\n")
    pico = repo / STORE / "picomatch@4.0.2/node_modules/picomatch"
    write(pico / "package.json", '{"name": "picomatch", "version": "4.0.2", "main": "index.js"}\n')
    write(pico / "index.js", "module.exports = () => true;\n")
    types = repo / STORE / "@types+node@22.0.0/node_modules/@types/node"
    write(types / "package.json", '{"name": "@types/node", "version": "22.0.0", "types": "index.d.ts"}\n')
    write(types / "index.d.ts", "declare module 'fs' {}\n")
    link(repo / "node_modules/@types/node", "../.pnpm/@types+node@22.0.0/node_modules/@types/node")
    legacy = repo / STORE / LEGACY / "node_modules"
    write(legacy / "plugin-legacy/package.json", '{"name": "plugin-legacy", "main": "index.js"}\n')
    write(legacy / "plugin-legacy/index.js", "module.exports = 'legacy';\n")
    link(legacy / "vite", "../../../../packages/vite")  # the store links back into first-party source
    vite = repo / "packages/vite"
    # "imports" maps a #name to a dependency: Node reads it from the package's package.json
    # above the narrow root (vite's own package.json has "#dep-types/*" and "#module-sync-enabled").
    write(vite / "package.json", '{"name": "vite", "version": "7.0.0", "imports": {"#glob": "picomatch"}}\n')
    write(vite / "secret-notes.md", "first-party, outside the narrow root\n")
    link(vite / "node_modules/picomatch", "../../../node_modules/.pnpm/picomatch@4.0.2/node_modules/picomatch")
    link(vite / "node_modules/plugin-legacy", f"../../../node_modules/.pnpm/{LEGACY}/node_modules/plugin-legacy")
    write(vite / "src/node/index.js", "module.exports = require('picomatch');\n")
    write(vite / "src/node/tsconfig.json",
          '{\n  "compilerOptions": {\n    "types": ["node"]\n  },\n  "include": ["./", "../types"]\n}\n')
    write(vite / "src/types/shims.d.ts", "declare const shim: string;\n")
    git(repo, "init", "-q")
    return repo


def suggested_mounts(root: Path) -> dict:
    result = subprocess.run([ROOTGUARD, "mounts", "--json", str(root)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


PROBE = r"""
const fs = require('fs');
const out = {};
for (const name of ['picomatch', '@types/node/package.json', 'plugin-legacy', '#glob']) {
  try { out[name] = require.resolve(name); } catch (e) { out[name] = null; }
}
out.first_party_visible = fs.existsSync('/workspace/packages/vite/secret-notes.md')
  || fs.existsSync('/workspace/packages/vite/src/types/shims.d.ts');
out.backlink_resolves = fs.existsSync('/workspace/node_modules/.pnpm/LEGACY/node_modules/vite/secret-notes.md');
console.log(JSON.stringify(out));
""".replace("LEGACY", LEGACY)


def run_in_sandbox(mounts: list[dict], cwd: str) -> dict:
    command = ["bwrap", "--die-with-parent", "--unshare-all", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
               "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib64", "sbin"):
        path = os.path.join("/", name)
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            command += ["--ro-bind", path, path]
    for mount in sorted(mounts, key=lambda m: m["target"]):  # parents before children
        command += ["--bind" if mount["mode"] == "rw" else "--ro-bind", mount["source"], mount["target"]]
    command += ["--chdir", cwd, "node", "-e", PROBE]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_suggested_mounts_let_node_resolve_in_a_sandbox_of_only_those_mounts(monorepo: Path):
    root = monorepo / "packages/vite/src/node"
    data = suggested_mounts(root)
    by_target = {s["target"]: s for s in data["suggested"]}
    assert by_target["/workspace/packages/vite/src/node"]["mode"] == "rw"
    package_modules = by_target["/workspace/packages/vite/node_modules"]
    assert package_modules["mode"] == "ro" and "packages/vite above the root" in package_modules["reason"]
    repo_modules = by_target["/workspace/node_modules"]
    assert repo_modules["mode"] == "ro" and str(root / "tsconfig.json") in repo_modules["reason"]
    assert "'node'" in repo_modules["reason"]
    assert "/workspace/node_modules/.pnpm" not in by_target  # inside the node_modules mount already
    backlink = str(monorepo / STORE / LEGACY / "node_modules/vite")
    assert {"link": backlink, "target": str(monorepo / "packages/vite"), "via": "store"} in data["first_party"]
    messages = [w["message"] for w in data["warnings"]]
    assert any("tsconfig.json:3:" in m and "types entry 'node'" in m for m in messages), messages

    seen = run_in_sandbox(data["suggested"], "/workspace/packages/vite/src/node")
    assert seen["picomatch"] == "/workspace/node_modules/.pnpm/picomatch@4.0.2/node_modules/picomatch/index.js"
    assert seen["@types/node/package.json"].endswith("/@types/node/package.json")
    assert seen["plugin-legacy"] is not None
    assert seen["#glob"] == seen["picomatch"]  # the package's "imports", read from its package.json
    assert seen["first_party_visible"] is False  # nothing first-party beyond the narrow root
    assert seen["backlink_resolves"] is False  # the flagged store link dangles: not handed over

    without = [s for s in data["suggested"] if s["target"] != "/workspace/packages/vite/node_modules"]
    control = run_in_sandbox(without, "/workspace/packages/vite/src/node")
    assert control["picomatch"] is None  # the gap the package-level mount closes


def test_the_package_json_above_a_narrow_root_is_one_file_mount(monorepo: Path):
    """vite's ``packages/vite/src/node``: Node reads ``type``/``imports``/``exports`` from
    ``packages/vite/package.json``; without it ``#glob`` does not resolve in the sandbox."""
    root = monorepo / "packages/vite/src/node"
    data = suggested_mounts(root)
    by_target = {s["target"]: s for s in data["suggested"]}
    manifest = by_target["/workspace/packages/vite/package.json"]
    assert manifest["mode"] == "ro" and manifest["source"] == str(monorepo / "packages/vite/package.json")
    assert "package.json of the package packages/vite above the root" in manifest["reason"]
    assert str(monorepo / "packages/vite/package.json") in data["single_files"]
    assert "/workspace/package.json" not in by_target  # the nearest manifest only, as Node reads it
    without = [s for s in data["suggested"] if s["target"] != "/workspace/packages/vite/package.json"]
    control = run_in_sandbox(without, "/workspace/packages/vite/src/node")
    assert control["picomatch"] is not None and control["#glob"] is None  # the gap the file closes
    # The package itself as the root: its package.json is inside, nothing to add.
    own = {s["target"] for s in suggested_mounts(monorepo / "packages/vite")["suggested"]}
    assert not any(t.endswith("package.json") for t in own), own


def test_tsconfig_include_outside_the_root_is_said_not_suggested(monorepo: Path):
    """vite's ``src/node/tsconfig.json`` includes ``../types``: first-party source outside the
    narrow root; the mounts leave it out and a warning names the tsconfig line that needs it."""
    root = monorepo / "packages/vite/src/node"
    data = suggested_mounts(root)
    assert not any("src/types" in s["source"] for s in data["suggested"])
    tsconfig = root / "tsconfig.json"
    warnings = [w for w in data["warnings"] if w["code"] == "tsconfig-input-outside-root"]
    assert len(warnings) == 1, data["warnings"]
    assert warnings[0]["message"].startswith(f"{tsconfig}:5:21:") and "'../types'" in warnings[0]["message"]
    assert str(monorepo / "packages/vite/src/types") in warnings[0]["message"]
    out = subprocess.run([ROOTGUARD, "mounts", str(root)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"{tsconfig}:5:21:" in out.stdout and "include entry '../types'" in out.stdout


def test_text_output_names_the_mounts_and_the_file_that_needs_them(monorepo: Path):
    root = monorepo / "packages/vite/src/node"
    out = subprocess.run([ROOTGUARD, "mounts", str(root)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "/workspace/packages/vite/node_modules:ro" in out.stdout
    assert f"{root / 'tsconfig.json'}:3:" in out.stdout
    assert "package-store entry links back to a workspace sibling package" in out.stdout
