"""The install hint for a missing extra, worded for how this Root Guard was installed.

Three installs exist and each needs its own words (no ``rootguard`` package is on a
public index, so ``pip install 'rootguard[...]'`` is never the answer):

* the VS Code extension's bundle (``bundled/libs`` of the .vsix): the extension installs
  the tray into an environment of its own (**Root Guard: Start Tray**);
* a source folder (an editable install, or ``python -m`` from a checkout): ``pip install
  '.[extra]'`` in that folder;
* a wheel: the extra's own requirements (read from the installed metadata), by name, into
  the interpreter that runs Root Guard.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

DISTRIBUTION = "rootguard"
BUNDLE_MARKER = os.path.join("bundled", "libs")


def package_dir() -> str:
    import lsp_bridge

    return os.path.dirname(os.path.abspath(lsp_bridge.__file__))


def install_kind(where: str | None = None) -> str:
    """``"vsix"``, ``"source"``, ``"wheel"`` or ``"unknown"`` for the lsp_bridge package at ``where``."""
    where = where or package_dir()
    parent = os.path.dirname(where)
    if parent.endswith(os.sep + BUNDLE_MARKER):
        return "vsix"
    if os.path.isfile(os.path.join(parent, "pyproject.toml")):
        return "source"
    if _distribution() is not None:
        return "wheel"
    return "unknown"


def extra_requirements(extra: str) -> list[str]:
    """The requirements the installed distribution declares for ``extra`` (without the marker)."""
    dist = _distribution()
    found: list[str] = []
    for requirement in (dist.requires or []) if dist is not None else []:
        spec, _, marker = requirement.partition(";")
        if re.search(r"""extra\s*==\s*["']""" + re.escape(extra) + """["']""", marker):
            found.append(spec.strip().replace(" ", ""))
    return found


def install_command(extra: str, where: str | None = None) -> str:
    """What to run (or do) to install ``extra`` for this installation."""
    kind = install_kind(where)
    if kind == "vsix":
        if extra == "tray":
            return ("in VS Code, run Root Guard: Start Tray: it installs the tray in the extension's own "
                    "environment (PySide6 and the Root Guard wheel the extension carries)")
        return "the extension carries it for Linux x86-64 with CPython 3.11-3.14; set rootguard.python to such a Python"
    if kind == "source":
        folder = os.path.dirname(where or package_dir())
        return f"pip install '.[{extra}]' in the Root Guard source folder ({folder})"
    requirements = extra_requirements(extra) if kind == "wheel" else []
    if requirements:
        return f"{shlex.quote(sys.executable)} -m pip install " + " ".join(shlex.quote(r) for r in requirements)
    return f"install the '{extra}' extra of Root Guard from the Root Guard source folder (pip install '.[{extra}]')"


def missing_extra(command: str, extra: str, module: str, where: str | None = None) -> str:
    """One line: what is missing and how to install it here."""
    return f"{command} needs the '{extra}' extra ({module} is not installed): {install_command(extra, where)}"


def _distribution():
    from importlib import metadata

    try:
        return metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
