"""The README's demo excerpt is what `rootguard demo` prints (regenerate: scripts/readme_demo.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("readme_demo", HERE / "scripts" / "readme_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_demo_excerpt_is_a_real_run():
    script = _script()
    real = script.demo_excerpt([str(Path(sys.executable).with_name("rootguard"))])
    shown = script.readme_excerpt((HERE / "README.md").read_text(encoding="utf-8"))
    assert script.comparable(shown) == script.comparable(real), (
        "README.md's demo excerpt is stale: run .venv/bin/python scripts/readme_demo.py")
