"""Landlock on the host side: detection and the degraded (Landlock-only) mode.

The system calls themselves live in ``shim.py``, a standalone script the
sandbox runs with the system interpreter; this module imports it so both
sides use the same code.
"""

from __future__ import annotations

from lsp_bridge.sandbox.shim import LandlockError, abi, handled, restrict

__all__ = ["LandlockError", "abi", "describe", "handled", "restrict"]


def describe() -> str:
    version = abi()
    return f"Landlock ABI {version}" if version > 0 else "no Landlock in this kernel"
