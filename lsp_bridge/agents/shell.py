"""A shell tool's command, rewritten to run confined under ``rootguard run``.

A hook cannot see what a shell command opens, so the shell tools (Claude ``Bash``, Codex
``exec_command``, Gemini ``run_shell_command``, Copilot ``bash``) are rewritten to run the
same command under ``rootguard run --root FOLDER... -- bash -c COMMAND`` with the window's
folders (the sandbox builds the same union from them). The rewrite always wraps: a command
that already looks like a ``rootguard run`` line is wrapped again (the model may have
written one with wider roots; the outer sandbox holds either way).

The interpreter is this installation's, by absolute path, with ``-P`` (the agent's working
directory never on the module path): never a ``rootguard`` looked up on ``PATH``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence

SHELL_MODES = ("confine", "deny", "allow")


def interpreter_command(*args: str) -> list[str]:
    """``[python, -P, -m, lsp_bridge.cli, *args]`` with this installation's interpreter."""
    return [sys.executable, "-P", "-m", "lsp_bridge.cli", *args]


def confined_argv(argv: Sequence[str], roots: Sequence[str]) -> list[str]:
    """``argv`` run under ``rootguard run`` with ``roots``."""
    wrapped = interpreter_command("run")
    for root in roots:
        wrapped += ["--root", root]
    return [*wrapped, "--", *argv]


def confined(command: str, roots: Sequence[str]) -> str:
    """The shell line that runs ``command`` (a shell line) under ``rootguard run`` with ``roots``."""
    return shlex.join(confined_argv(["bash", "-c", command], roots))


def hook_command(agent: str) -> str:
    """The command line an agent's settings run for its pre-tool hook."""
    return shlex.join(interpreter_command("hook", agent))
