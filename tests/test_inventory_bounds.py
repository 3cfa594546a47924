"""A hostile repository cannot make inspecting it hang or exhaust memory, and what is cut is reported.

Through the real command (``python -m lsp_bridge.cli roots``) with a time limit: a
``pnpm-workspace.yaml`` pattern of 100,000 ``**/`` over 3,000 directories used to hang
``roots`` past a minute (each ``**`` re-listed every directory); an ``extends`` chain of large
tsconfig files used to be parsed whole, every file held while the next was read (20 files of
8 MB: a MemoryError). Each limit hit is a warning naming the file, never a silent pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_bridge.inventory.pnpm_layout import MAX_PATTERN_PARTS, MAX_WORKSPACE_PATTERNS, workspace_packages
from lsp_bridge.inventory.tsconfig import MAX_CHAIN_BYTES, MAX_TSCONFIG_BYTES

pytestmark = pytest.mark.timeout(120)


def roots(root: Path, timeout: int = 60) -> tuple[dict, float]:
    started = time.monotonic()
    shown = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "roots", "--json", str(root)],
                           capture_output=True, text=True, timeout=timeout)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout), time.monotonic() - started


def wide_repository(tmp_path: Path, packages: list[str]) -> Path:
    """A git repository with 3,000 directories (one holds a package ``x``) and the given workspace patterns."""
    repo = tmp_path.resolve() / "repo"
    (repo / ".git").mkdir(parents=True)
    for i in range(3000):
        (repo / "d" / str(i)).mkdir(parents=True)
    (repo / "d" / "7" / "x").mkdir()
    (repo / "pnpm-workspace.yaml").write_text(json.dumps({"packages": packages}))
    return repo


def test_a_workspace_pattern_of_many_double_stars_is_read_promptly(tmp_path: Path):
    repo = wide_repository(tmp_path, ["**/" * 100_000 + "x"])  # a 300 KB pattern
    data, elapsed = roots(repo)
    assert elapsed < 20, f"roots took {elapsed:.1f} s"
    assert not [w for w in data["warnings"] if "workspace" in w["code"]]  # nothing cut: ** runs collapse to one
    assert workspace_packages(str(repo), [200_000]) == [str(repo / "d" / "7" / "x")]


@pytest.mark.parametrize("packages, said", [
    (["**/a/" * 2000 + "x"], f"more than {MAX_PATTERN_PARTS} parts"),
    ([f"p{i}" for i in range(MAX_WORKSPACE_PATTERNS + 1)], f"more than {MAX_WORKSPACE_PATTERNS} patterns"),
])
def test_an_oversized_workspace_manifest_is_refused_with_a_warning_naming_it(tmp_path: Path, packages, said):
    repo = wide_repository(tmp_path, packages)
    data, elapsed = roots(repo)
    assert elapsed < 20, f"roots took {elapsed:.1f} s"
    [warning] = [w for w in data["warnings"] if w["code"] == "workspace-packages-refused"]
    assert warning["message"].startswith(f"{repo}/pnpm-workspace.yaml") and said in warning["message"]
    assert "no workspace package is read" in warning["message"]


def big_tsconfig(path: Path, extends: str | None, size: int) -> None:
    """A valid tsconfig of about ``size`` bytes (JSONC: a comment, a long ``include``)."""
    head = '// generated\n{"extends": ' + json.dumps(extends) + ', "include": ['
    item = '"src/' + "x" * 40 + '/**/*.ts",'
    count = max((size - len(head)) // len(item), 1)
    path.write_text(head + item * count + '"src"]}\n')


@pytest.mark.parametrize("size, files, reason", [
    (MAX_TSCONFIG_BYTES + 4096, 5, f"larger than {MAX_TSCONFIG_BYTES >> 20} MiB"),
    (MAX_TSCONFIG_BYTES - 4096, 6, f"past {MAX_CHAIN_BYTES >> 20} MiB in all"),
])
def test_an_extends_chain_of_large_files_is_refused_promptly_naming_the_file(tmp_path: Path, size, files, reason):
    repo = tmp_path.resolve() / "mono"
    (repo / ".git").mkdir(parents=True)
    root = repo / "packages" / "app"
    root.mkdir(parents=True)
    (root / "tsconfig.json").write_text('{"extends": "../../t0.json"}')
    for i in range(files):
        big_tsconfig(repo / f"t{i}.json", f"./t{i + 1}.json" if i + 1 < files else None, size)
    data, elapsed = roots(root)
    assert elapsed < 20, f"roots took {elapsed:.1f} s"
    refused = {r["path"]: r for r in data["toolchain"]["refused"]}
    assert len(refused) == 1, refused
    [(path, refusal)] = refused.items()
    assert reason in refusal["reason"] and path.startswith(f"{repo}/t")
    warned = [w for w in data["warnings"] if w["code"] == "tsconfig-extends-refused"]
    assert warned and reason in warned[0]["message"]
    followed = [r["path"] for r in data["toolchain"]["rules"]]
    assert path not in followed and len([p for p in followed if p.startswith(f"{repo}/t")]) < files


def test_a_workspace_expansion_that_runs_out_of_budget_names_no_package_and_says_so(tmp_path: Path):
    repo = wide_repository(tmp_path, ["d/*/x", "d/**"])
    diagnostics: list = []
    assert workspace_packages(str(repo), [500], diagnostics) == []  # never a partial list
    [refused] = diagnostics
    assert refused.code == "workspace-packages-refused" and refused.file == str(repo / "pnpm-workspace.yaml")
    assert "reads too many directories: no workspace package is read" in refused.message
    found = workspace_packages(str(repo), [200_000], diagnostics)
    assert len(found) == 3002 and str(repo / "d" / "7" / "x") in found and len(diagnostics) == 1  # enough budget
