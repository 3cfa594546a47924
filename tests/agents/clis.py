"""The four agent CLIs as the end-to-end tests drive them: where each is installed, how it is pointed at
the fake model, which of its tools reads, writes and runs a shell, and how its hook is configured.

Each agent runs in its most permissive mode (Claude ``bypassPermissions``, Codex ``danger-full-access``,
Gemini ``yolo``, Copilot ``--allow-all-tools``) so that its hook is the only barrier: with the hook
switched off, the same calls read the secret and write the file (``test_agents_e2e``'s control test).
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.turns import ToolCall

REPO = Path(__file__).resolve().parents[2]
PACKAGES = Path(__file__).resolve().parent / "clis"
PROMPT = "Do the task."  # the fake model is scripted: the prompt is never read


def tools_dir() -> Path:
    """Where ``scripts/install_agents.sh`` put the CLIs (``ROOTGUARD_AGENTS_DIR`` overrides it)."""
    return Path(os.environ.get("ROOTGUARD_AGENTS_DIR") or REPO / ".tools" / "agents")


def pinned_versions() -> dict[str, str]:
    """npm package → the exact version tests/agents/clis/package.json pins."""
    return dict(json.loads((PACKAGES / "package.json").read_text())["dependencies"])


def installed() -> str | None:
    """None when the pinned CLIs are installed, else why not (for a skip or a failure message)."""
    lock = (PACKAGES / "package-lock.json").read_bytes()
    stamp = tools_dir() / ".installed-package-lock.json"
    if not stamp.is_file() or stamp.read_bytes() != lock:
        return f"the pinned agent CLIs are not installed in {tools_dir()}: run scripts/install_agents.sh"
    return None


@dataclass(frozen=True)
class Agent:
    """One agent CLI; subclasses fill in the details."""

    name: str = ""
    label: str = ""
    package: str = ""
    binary: str = ""
    hook_scope: str = "user"  # where `rootguard agents install` puts the hook in the tests

    @property
    def version(self) -> str:
        return pinned_versions()[self.package]

    def executable(self) -> str:
        return str(tools_dir() / "node_modules" / ".bin" / self.binary)

    # -- the model calls the tests script -----------------------------------------------

    def read(self, path: str) -> ToolCall:
        raise NotImplementedError

    def write(self, path: str, text: str) -> ToolCall:
        raise NotImplementedError

    def shell(self, command: str) -> ToolCall:
        raise NotImplementedError

    # -- running -----------------------------------------------------------------

    def prepare(self, home: Path, project: Path) -> None:
        """The agent's own settings for the fake model (no hook): in ``home`` and ``project``."""

    def env(self, home: Path) -> dict[str, str]:
        """Environment variables pointing the agent at ``{MODEL_URL}`` (filled in by run_case)."""
        return {}

    def argv(self, home: Path, project: Path, extra: tuple[str, ...] = ()) -> list[str]:
        raise NotImplementedError

    def write_hook(self, home: Path, project: Path, command: str) -> None:
        """Configure ``command`` as the agent's pre-tool hook by hand (the bench's no-op hook)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Claude(Agent):
    name: str = "claude"
    label: str = "Claude Code"
    package: str = "@anthropic-ai/claude-code"
    binary: str = "claude"
    hook_scope: str = "project"

    def read(self, path: str) -> ToolCall:
        return ToolCall("Read", {"file_path": path})

    def write(self, path: str, text: str) -> ToolCall:
        return ToolCall("Write", {"file_path": path, "content": text})

    def shell(self, command: str) -> ToolCall:
        return ToolCall("Bash", {"command": command, "description": "run a command"})

    def env(self, home: Path) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": "{MODEL_URL}", "ANTHROPIC_API_KEY": "fake-key",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "IS_SANDBOX": "1"}  # bypassPermissions as root (a test machine's CI user)

    def argv(self, home: Path, project: Path, extra: tuple[str, ...] = ()) -> list[str]:
        return [self.executable(), "-p", PROMPT, "--output-format", "json", "--permission-mode", "bypassPermissions",
                *extra]

    def sdk_argv(self, extra: tuple[str, ...] = ()) -> list[str]:
        """Claude Code as an SDK host drives it: stream-json both ways, permission prompts to the host."""
        return [self.executable(), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                "--verbose", "--permission-prompt-tool", "stdio", *extra]

    def write_hook(self, home: Path, project: Path, command: str) -> None:
        group = [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
        _write_json(project / ".claude" / "settings.json", {"hooks": {"PreToolUse": group}})


@dataclass(frozen=True)
class Codex(Agent):
    name: str = "codex"
    label: str = "Codex"
    package: str = "@openai/codex"
    binary: str = "codex"

    def read(self, path: str) -> ToolCall:
        return ToolCall("exec_command", {"cmd": f"cat {shlex.quote(path)}"})  # Codex reads through its shell

    def write(self, path: str, text: str) -> ToolCall:
        lines = "".join(f"+{line}\n" for line in text.splitlines())
        return ToolCall("apply_patch", f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n")

    def shell(self, command: str) -> ToolCall:
        return ToolCall("exec_command", {"cmd": command})

    def codex_home(self, home: Path) -> Path:
        return home / ".codex"

    def prepare(self, home: Path, project: Path) -> None:
        codex_home = self.codex_home(home)
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            '# the fake model (tests/agents/fake_model.py)\nmodel = "fake-model"\nmodel_provider = "fake"\n\n'
            '[model_providers.fake]\nname = "fake"\nwire_api = "responses"\nenv_key = "FAKE_API_KEY"\n')
        # A catalog entry for the fake model: without one Codex offers no apply_patch tool.
        entry = {"slug": "fake-model", "display_name": "Fake model", "description": "scripted",
                 "supported_reasoning_levels": [], "shell_type": "unified_exec", "visibility": "list",
                 "supported_in_api": True, "priority": 1, "base_instructions": "You are a scripted test model.",
                 "supports_reasoning_summaries": False, "support_verbosity": False, "default_verbosity": None,
                 "apply_patch_tool_type": "freeform", "truncation_policy": {"mode": "bytes", "limit": 10000},
                 "supports_parallel_tool_calls": False, "experimental_supported_tools": [],
                 "prefer_websockets": False, "context_window": 200000}
        _write_json(codex_home / "catalog.json", {"models": [entry]})

    def env(self, home: Path) -> dict[str, str]:
        return {"CODEX_HOME": str(self.codex_home(home)), "FAKE_API_KEY": "fake-key"}

    def argv(self, home: Path, project: Path, extra: tuple[str, ...] = ()) -> list[str]:
        # The hook is trusted for this run (a person trusts it once in `codex` → /hooks, by its hash).
        return [self.executable(), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                "--dangerously-bypass-hook-trust", "-c", "analytics.enabled=false",
                "-c", 'model_providers.fake.base_url="{MODEL_URL}/v1"',
                "-c", f"model_catalog_json={json.dumps(str(self.codex_home(home) / 'catalog.json'))}", *extra, PROMPT]

    def write_hook(self, home: Path, project: Path, command: str) -> None:
        config = self.codex_home(home) / "config.toml"
        config.write_text(config.read_text() + f'\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = "command"\n'
                                               f"command = {json.dumps(command)}\n")


@dataclass(frozen=True)
class Gemini(Agent):
    name: str = "gemini"
    label: str = "Gemini CLI"
    package: str = "@google/gemini-cli"
    binary: str = "gemini"

    def read(self, path: str) -> ToolCall:
        return ToolCall("read_file", {"file_path": path})

    def write(self, path: str, text: str) -> ToolCall:
        return ToolCall("write_file", {"file_path": path, "content": text})

    def shell(self, command: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": command, "description": "run a command"})

    def prepare(self, home: Path, project: Path) -> None:
        _write_json(home / ".gemini" / "settings.json", {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        })

    def env(self, home: Path) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": "{MODEL_URL}", "GEMINI_API_KEY": "fake-key",
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
                "GEMINI_CLI_NO_RELAUNCH": "true"}  # no second node process for a larger heap: ~3 s less per run

    def argv(self, home: Path, project: Path, extra: tuple[str, ...] = ()) -> list[str]:
        return [self.executable(), "-p", PROMPT, "--output-format", "json", "--approval-mode", "yolo", *extra]

    def write_hook(self, home: Path, project: Path, command: str) -> None:
        settings = home / ".gemini" / "settings.json"
        data = json.loads(settings.read_text())
        data["hooks"] = {"BeforeTool": [{"matcher": ".*", "hooks": [{"type": "command", "command": command}]}]}
        _write_json(settings, data)


@dataclass(frozen=True)
class Copilot(Agent):
    name: str = "copilot"
    label: str = "Copilot CLI"
    package: str = "@github/copilot"
    binary: str = "copilot"

    def read(self, path: str) -> ToolCall:
        return ToolCall("view", {"path": path})

    def write(self, path: str, text: str) -> ToolCall:
        return ToolCall("create", {"path": path, "file_text": text})

    def shell(self, command: str) -> ToolCall:
        return ToolCall("bash", {"command": command, "description": "run a command"})

    def prepare(self, home: Path, project: Path) -> None:
        # Copilot unpacks its runtime into $XDG_CACHE_HOME/copilot: the one install_agents.sh unpacked.
        cache = home / ".cache"
        cache.mkdir(parents=True, exist_ok=True)
        link = cache / "copilot"
        if not link.exists():
            link.symlink_to(tools_dir() / "cache" / "copilot")

    def env(self, home: Path) -> dict[str, str]:
        return {"COPILOT_PROVIDER_BASE_URL": "{MODEL_URL}/v1", "COPILOT_PROVIDER_API_KEY": "fake-key",
                "COPILOT_PROVIDER_MODEL_ID": "gpt-4.1", "COPILOT_PROVIDER_WIRE_MODEL": "fake-model",
                "COPILOT_AUTO_UPDATE": "false", "XDG_CACHE_HOME": str(home / ".cache")}

    def argv(self, home: Path, project: Path, extra: tuple[str, ...] = ()) -> list[str]:
        return [self.executable(), "-p", PROMPT, "--allow-all-tools", "--disable-client-telemetry", "--no-ask-user",
                *extra]

    def write_hook(self, home: Path, project: Path, command: str) -> None:
        _write_json(home / ".copilot" / "hooks" / "bench.json",
                    {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": command, "timeoutSec": 60}]}})


AGENTS: dict[str, Agent] = {a.name: a for a in (Claude(), Codex(), Gemini(), Copilot())}


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
