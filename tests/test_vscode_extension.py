"""The VS Code extension builds into a .vsix and its TypeScript unit tests pass.

Runs the extension's own toolchain (npm ci from package-lock.json, npm run package,
npm test), so a broken build or a failing TS test fails CI. Skipped only when npm is
not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parent.parent / "vscode-extension"
VSIX = EXTENSION / "rootguard.vsix"
# npm keeps its cache and settings under HOME; the autouse fixture of conftest
# replaces HOME per test, so remember the real environment for npm.
NPM_ENV = dict(os.environ)

pytestmark = [
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: cannot build the VS Code extension"),
    pytest.mark.timeout(1200),  # npm ci and npm run package (600 s each at most) count in the first test that needs them
]


def npm(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Runs npm in vscode-extension/ and fails the test with its output when it fails."""
    done = subprocess.run(
        ["npm", *args], cwd=EXTENSION, env=NPM_ENV, capture_output=True, text=True, timeout=timeout,
    )
    if done.returncode != 0:
        pytest.fail(f"npm {' '.join(args)} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def installed_matches_lock() -> bool:
    """True when node_modules holds exactly what package-lock.json pins."""
    hidden = EXTENSION / "node_modules" / ".package-lock.json"
    if not hidden.is_file():
        return False
    lock = json.loads((EXTENSION / "package-lock.json").read_text())["packages"]
    installed = json.loads(hidden.read_text())["packages"]
    wanted = {k: v.get("version") for k, v in lock.items() if k and not v.get("optional")}
    have = {k: v.get("version") for k, v in installed.items()}
    return all(have.get(k) == v for k, v in wanted.items())


@pytest.fixture(scope="module")
def installed() -> None:
    """The locked npm dependencies (installed only if needed)."""
    if not installed_matches_lock():
        # --ignore-scripts: nothing to build natively, and no download beyond the registry
        npm("ci", "--ignore-scripts", "--no-audit", "--no-fund")


@pytest.fixture(scope="module")
def built(installed) -> Path:
    """Packages the .vsix (minutes: the bundle carries the MCP SDK, and vsce scans every file)."""
    VSIX.unlink(missing_ok=True)
    npm("run", "package")
    assert VSIX.is_file(), "npm run package did not produce rootguard.vsix"
    return VSIX


@pytest.mark.slow
def test_vsix_holds_the_bundle_manifest_and_icon(built):
    with zipfile.ZipFile(built) as vsix:
        names = set(vsix.namelist())
        manifest = json.loads(vsix.read("extension/package.json"))
        bundle = vsix.read("extension/dist/extension.js").decode()
        icon = vsix.read("extension/media/icon.png")
    assert {"extension/dist/extension.js", "extension/package.json", "extension/media/icon.png",
            "extension/readme.md", "extension/changelog.md", "extension/LICENSE.txt",
            "extension.vsixmanifest"} <= names
    assert icon.startswith(b"\x89PNG"), "the icon is a PNG"
    assert manifest["icon"] == "media/icon.png"
    assert manifest["main"] == "./dist/extension.js"
    # one bundle: the language client is inside it, node_modules and sources are not shipped
    assert "vscode-languageclient" not in manifest.get("bundledDependencies", [])
    assert 'require("vscode")' in bundle
    assert not any(n.startswith("extension/node_modules/") or n.startswith("extension/src/") for n in names)
    assert not any(n.endswith(".ts") or n.endswith(".map") for n in names)


@pytest.mark.slow
def test_manifest_activates_at_startup_and_documents_settings(built):
    with zipfile.ZipFile(built) as vsix:
        manifest = json.loads(vsix.read("extension/package.json"))
    assert "onStartupFinished" in manifest["activationEvents"]
    settings = manifest["contributes"]["configuration"]["properties"]
    for key in ("rootguard.serverCommand", "rootguard.python"):
        assert settings[key].get("markdownDescription") or settings[key].get("description")
    assert settings["rootguard.serverCommand"]["type"] == "array"
    # the Python extension is optional: used when present, never required
    assert "extensionDependencies" not in manifest
    assert manifest["contributes"]["mcpServerDefinitionProviders"][0]["id"] == "rootguard.mcp"
    engine = manifest["engines"]["vscode"]
    assert engine.startswith("^1."), engine
    assert int(engine[3:].split(".")[0]) <= 100, f"{engine} must cover code-server 4.100 (VS Code 1.100)"
    assert manifest["license"] == "MIT"


def test_typescript_unit_tests_pass(installed):
    done = npm("test")
    assert " passing" in done.stdout
    assert " failing" not in done.stdout


@pytest.mark.slow
def test_vsix_carries_the_language_server_and_its_dependencies(built, tmp_path):
    """Installing the .vsix is the whole install: the bundle runs on a bare interpreter (no site-packages)."""
    import re
    import sys
    import tomllib

    with zipfile.ZipFile(built) as vsix:
        names = set(vsix.namelist())
        vsix.extractall(tmp_path)
    for name in ("bundled/tool/launch.py", "bundled/libs/lsp_bridge/__init__.py", "bundled/libs/pygls/__init__.py",
                 "bundled/libs/watchdog/__init__.py", "bundled/libs/detect_secrets/__init__.py"):
        assert f"extension/{name}" in names, name
    libs = [n for n in names if n.startswith("extension/bundled/libs/")]
    assert not any(n.endswith((".so", ".pyd", ".pyc")) for n in libs), "the language server's bundle: pure Python only"
    # the MCP SDK (Linux x86-64: the pure part zipped, the compiled parts per CPython version)
    # and the tray's install (the Root Guard wheel, pip's wheel, the installer)
    for name in ("bundled/mcp/common.zip", "bundled/tool/install_tray.py"):
        assert f"extension/{name}" in names, name
    for version in ("cp311", "cp312", "cp313", "cp314"):
        assert any(n.startswith(f"extension/bundled/mcp/{version}/pydantic_core/") for n in names), version
    assert any(re.fullmatch(r"extension/bundled/wheels/rootguard-[^/]+-py3-none-any\.whl", n) for n in names)
    assert any(re.fullmatch(r"extension/bundled/tool/pip-[^/]+\.whl", n) for n in names)
    assert not any(n.endswith(".pyc") or "/__pycache__/" in n for n in names)
    # every base dependency of the project is pinned in the bundle's requirements
    base = tomllib.loads((EXTENSION.parent / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = (EXTENSION / "bundled" / "requirements.txt").read_text().lower().replace("_", "-")
    for dependency in base:
        name = re.split(r"[<>=~! \[]", dependency, maxsplit=1)[0].lower().replace("_", "-")
        assert f"\n{name}==" in pinned, f"{name} is a dependency of rootguard but not in bundled/requirements.txt"
    launcher = tmp_path / "extension" / "bundled" / "tool" / "launch.py"
    done = subprocess.run([sys.executable, "-S", str(launcher), "lsp_bridge", "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "language server" in done.stdout
