"""``rootguard demo``: the main job on a built-in monorepo, no editor needed.

Builds a small pnpm-style monorepo in a temporary directory, opens the narrow
package folder as an editor would, then adds the repository root and prints
what that hands over: the effective roots before and after, the shadowed
entry, the linked worktree, and the widening report.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

from lsp_bridge.cli.demo_repo import build_monorepo
from lsp_bridge.core.session import open_session
from lsp_bridge.inventory.report import format_roots, roots_report, union_notes
from lsp_bridge.inventory.scan import inventory


def run_demo(*, keep: bool = False, as_json: bool = False) -> int:
    workdir = tempfile.mkdtemp(prefix="rootguard-demo-")
    try:
        demo = build_monorepo(workdir)
        user_config = os.path.join(workdir, "user-config.toml")  # never the real user's file
        with open(user_config, "w", encoding="utf-8") as handle:
            handle.write("# Root Guard demo: an empty user configuration\nversion = 2\n")
        env = {"ROOTGUARD_CONFIG": user_config}
        narrow = open_session([demo.narrow], env=env)
        wide = open_session([demo.narrow, demo.repo], env=env)
        assert narrow.scope is not None and wide.scope is not None  # open_session built them
        report = inventory(narrow.scope.union.paths, wide.scope.union.paths, notes=union_notes(narrow, wide))
        widenings = wide.scope.union.widenings_from(narrow.scope.union)
        if as_json:
            out = {
                "narrow": roots_report(narrow, with_mounts=False),
                "wide": roots_report(wide, with_mounts=False),
                "widening": [w.to_json() for w in widenings],
                "inventory": report.to_json(),
            }
            print(json.dumps(out, indent=2))
            return 0
        # Paths below the temporary folder are shown as "…/shop": the report reads the
        # same on every run (the README's excerpt is this output, checked by a test).
        lines = [f"Demo monorepo built in {workdir} (shown as … below)", ""]
        lines.append(f"1. The editor opens {demo.narrow}")
        lines.append(_indent(format_roots(roots_report(narrow, with_mounts=False))))
        lines.append(f"\n2. The engineer adds the repository root {demo.repo}")
        lines.append(_indent(format_roots(roots_report(wide, with_mounts=False))))
        lines.append("\n3. Root Guard's widening warning:")
        for widening in widenings:
            lines.append(f"   ⚠ {widening.describe()}")
        lines.append(_indent("\n".join(report.describe())))
        text = "\n".join(lines[:1] + [_short(line, workdir) for line in lines[1:]])
        print(text)
        if keep:
            print(f"\n(kept {workdir})")
        return 0
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _short(text: str, workdir: str) -> str:
    for prefix in dict.fromkeys((os.path.realpath(workdir), workdir)):
        text = text.replace(prefix, "…")
    return text


def _indent(text: str, pad: str = "   ") -> str:
    return "\n".join(pad + line if line else line for line in text.splitlines())
