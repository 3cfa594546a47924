"""Installs the Root Guard tray into a private virtual environment, from the .vsix alone.

    python install_tray.py ENV_DIR

What VS Code's **Root Guard: Start Tray → Install Tray** runs (and what
``tests/test_tray_install.py`` runs): it works on a fresh Debian or Ubuntu desktop,
where ``pip install --user`` is refused (PEP 668) and ``python3-venv``/``python3-pip``
may be missing:

1. ``python -m venv --without-pip ENV_DIR`` (the venv module is in every Python;
   only ensurepip is left out by Debian);
2. pip from the wheel the extension carries (``bundled/tool/pip-*.whl``, run as
   ``python pip.whl/pip``: pip runs from its own wheel);
3. ``pip install <the Root Guard wheel the extension carries>[tray]``: Root Guard
   comes from that file, never from a package index (no ``rootguard`` package is
   published anywhere); its dependencies, PySide6-Essentials included, are the
   versions its metadata pins, from PyPI.

Prints one line per step and, at the end, ``tray command: ENV_DIR/bin/rootguard tray``.
Exit 0 when the tray can start (``import PySide6.QtWidgets, tray.app`` in the new
environment), 1 when a step failed (its output is above), 2 for bad arguments.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WHEELS = os.path.join(os.path.dirname(HERE), "wheels")
MINIMUM = (3, 11)


def one(pattern: str, what: str) -> str:
    found = sorted(glob.glob(pattern))
    if not found:
        raise SystemExit(f"install_tray: {what} is missing ({pattern}); reinstall the extension")
    return found[-1]


def run(step: str, argv: list[str]) -> None:
    print(f"install_tray: {step}: {' '.join(argv)}", flush=True)
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        print(f"install_tray: {step} failed (exit {done.returncode})", file=sys.stderr, flush=True)
        raise SystemExit(1)


def python_of(env: str) -> str:
    return os.path.join(env, "Scripts", "python.exe") if os.name == "nt" else os.path.join(env, "bin", "python")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not os.path.isabs(argv[0]):
        print("usage: python install_tray.py ABSOLUTE_ENV_DIR", file=sys.stderr)
        return 2
    if sys.version_info < MINIMUM:
        print(f"install_tray: needs Python {MINIMUM[0]}.{MINIMUM[1]} or newer, not {sys.version.split()[0]}", file=sys.stderr)
        return 2
    env = argv[0]
    wheel = one(os.path.join(WHEELS, "rootguard-*.whl"), "the Root Guard wheel")
    pip = one(os.path.join(HERE, "pip-*.whl"), "pip's wheel")
    python = python_of(env)
    if not os.path.exists(python):
        run("environment", [sys.executable, "-m", "venv", "--without-pip", env])
    pip_run = [python, os.path.join(pip, "pip"), "--disable-pip-version-check", "--no-input"]
    run("pip", [*pip_run, "install", "--quiet", pip])
    run("tray", [python, "-m", "pip", "--disable-pip-version-check", "--no-input", "install", "--quiet",
                 "--force-reinstall", "--no-deps", wheel])
    run("dependencies", [python, "-m", "pip", "--disable-pip-version-check", "--no-input", "install", "--quiet",
                         f"{wheel}[tray]"])
    run("check", [python, "-c", "import PySide6.QtWidgets, tray.app, lsp_bridge; print('install_tray: tray importable')"])
    script = os.path.join(env, "Scripts", "rootguard.exe") if os.name == "nt" else os.path.join(env, "bin", "rootguard")
    print(f"tray command: {script} tray", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
