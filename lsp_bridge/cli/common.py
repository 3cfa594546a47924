"""What the command line's grammar and its commands share: exit codes, the delegated
commands, the operations ``check`` decides, and writing to stdout."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

EXIT_ALLOW, EXIT_DENY, EXIT_BAD_INPUT, EXIT_REQUEST = 0, 1, 2, 3
EXIT_UNCONFINED = 125  # rootguard run: confinement cannot be set up (lsp_bridge.sandbox.runner)
DECISION_EXIT = {"allow": EXIT_ALLOW, "deny": EXIT_DENY, "request": EXIT_REQUEST}
CHECK_OPS = ("read", "write", "delete", "rename", "metadata")

# command -> (module, what it is, extra that provides its third-party modules)
DELEGATED = {
    "lsp": ("lsp_bridge.lsp.stdio", "the language server on stdio", None),
    "tray": ("tray.cli", "the tray app and approval broker", "tray"),
    "mcp": ("lsp_bridge.mcp.command", "the guarded MCP file server on stdio", "mcp"),
    "audit": ("lsp_bridge.cli.audit", "the decision log", None),
    "hook": ("lsp_bridge.agents.hook", "an agent's pre-tool hook: decide its tool call (docs/agents.md)", None),
    "agents": ("lsp_bridge.agents.command", "install, remove and check the hook in each agent's settings", None),
}
# extra -> the third-party modules it provides (a missing one names the extra to install)
EXTRA_MODULES = {
    "tray": ("PySide6", "shiboken6"),
    "mcp": ("mcp", "mcp_types", "anyio", "pydantic", "pydantic_core", "httpx", "httpx2", "httpcore2", "starlette",
            "sse_starlette", "jsonschema", "typing_inspection", "annotated_types", "jwt", "multipart", "opentelemetry"),
}


def write(text: str) -> None:
    """Print to stdout; a closed pipe (``| head``) ends the output, not the exit code."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def wants_json(argv: Sequence[str]) -> bool:
    return "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
