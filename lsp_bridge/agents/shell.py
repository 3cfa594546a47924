"""A shell tool's command, rewritten to run confined under ``rootguard run``.

A hook cannot see what a shell command opens, so the shell tools (Claude ``Bash``, Codex
``exec_command``, Gemini ``run_shell_command``, Copilot ``bash``) are rewritten to run the
same command under ``rootguard run --root FOLDER... -- bash -c -- COMMAND`` with the window's
folders (the sandbox builds the same union from them; the ``--`` after ``-c`` keeps a command that
starts with ``-`` or ``+`` the command text, never bash's options). The rewrite always wraps: a command
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
    """``rootguard ARGS`` as this installation runs it: ``[python, -P, -m, lsp_bridge.cli, *args]``
    with this interpreter; for the copy bundled in the VS Code extension (``<bundle>/libs/lsp_bridge``
    beside ``<bundle>/tool/launch.py``, not on the interpreter's own path) its launcher, which puts
    the bundle first on the path (a script's directory, never the working directory)."""
    import os

    import lsp_bridge

    root = os.path.dirname(os.path.dirname(os.path.abspath(lsp_bridge.__file__)))
    launcher = os.path.join(os.path.dirname(root), "tool", "launch.py")
    if os.path.basename(root) == "libs" and os.path.isfile(launcher):
        return [sys.executable, launcher, "lsp_bridge.cli", *args]
    return [sys.executable, "-P", "-m", "lsp_bridge.cli", *args]


def can_start(argv: list[str]) -> str | None:
    """None when ``argv`` (a hook command with ``--help`` instead of the agent) starts from a neutral
    directory with no PYTHONPATH, as an agent would start it; else why not."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    try:
        done = subprocess.run(argv, cwd="/", env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return None


def confined_argv(argv: Sequence[str], roots: Sequence[str]) -> list[str]:
    """``argv`` run under ``rootguard run`` with ``roots``."""
    wrapped = interpreter_command("run")
    for root in roots:
        wrapped += ["--root", root]
    return [*wrapped, "--", *argv]


def confined(command: str, roots: Sequence[str]) -> str:
    """The shell line that runs ``command`` (a shell line) under ``rootguard run`` with ``roots``."""
    return shlex.join(confined_argv(["bash", "-c", "--", command], roots))


def hook_command(agent: str) -> str:
    """The command line an agent's settings run for its pre-tool hook."""
    return shlex.join(interpreter_command("hook", agent))
