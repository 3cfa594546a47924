"""Driving the real agent CLIs (Claude Code, Codex, Gemini CLI, Copilot CLI) offline in tests."""
