"""The one environment Root Guard runs git in (the inventory's history, the demo)."""

from __future__ import annotations

import os


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without inherited ``GIT_*`` variables (they could redirect the
    repository git works on), with no optional locks, no prompt, no lazy fetch and the C locale; then
    ``extra`` (the demo's fixed identity and dates)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # GIT_NO_LAZY_FETCH (git 2.45 and later): a partial clone never fetches a missing object
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1", LC_ALL="C")
    env.update(extra or {})
    return env
