"""Root Guard's language server and the policy core every front end shares.

The domain modules here (``config``, ``worktrees``, ``union``, ``scope``,
``policy``, ``resolver``, ``inventory``, ``mounts``) are plain Python: they import
no pygls, Qt or socket code, so the CLI, the tray and the MCP server reuse them.
"""

__version__ = "0.1.0"
