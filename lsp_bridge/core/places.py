"""Root Guard's own state on this machine: the state directory and the audit log in it.

Every layer that writes or reads the decision log (the MCP server, the agents' hooks, the
tray's history beside it) and the engine's protected areas (``core/protected.py``) find it
here, so none of them imports another layer for a path.
"""

from __future__ import annotations

import os

AUDIT_FILE_NAME = "audit.jsonl"


def state_dir() -> str:
    """``platformdirs.user_state_dir("rootguard")`` (``$XDG_STATE_HOME/rootguard`` on Linux)."""
    import platformdirs

    return platformdirs.user_state_dir("rootguard")


def audit_path() -> str:
    """``<user state dir>/rootguard/audit.jsonl``: the decision audit log."""
    return os.path.join(state_dir(), AUDIT_FILE_NAME)
