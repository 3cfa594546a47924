"""``[sandbox]``: what ``rootguard run`` hands the command besides files.

```toml
[sandbox]
env = ["NODE_OPTIONS", "NPM_*"]   # environment variables granted beyond the built-in allow-list
memory = "8G"                     # per process: RLIMIT_DATA ("unlimited" to lift it)
processes = 4096                  # tasks (processes and threads) in the sandbox
tmp_size = "2G"                   # each private tmpfs: /tmp and the home folder
```

``env`` entries are names or ``fnmatch`` patterns; a variable whose name looks like
a secret (``sandbox/environment.py``) passes only when an entry names it exactly.
A project file (a cloned repository) may not grant variables (its ``env`` is an
error) and may only lower a limit. Sizes: an integer of bytes or a string with a
``K``/``M``/``G``/``T`` suffix (powers of 1024); ``"unlimited"`` lifts a limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lsp_bridge.core.settings import Config

SANDBOX_KEYS = ("env", "memory", "processes", "tmp_size")
LIMIT_KEYS = ("memory", "processes", "tmp_size")
UNLIMITED = 0  # stored value of "unlimited"
DEFAULTS: Mapping[str, int] = {key: getattr(Config, f"sandbox_{key}") for key in LIMIT_KEYS}  # settings.Config
MINIMUMS: Mapping[str, int] = {"memory": 64 << 20, "processes": 16, "tmp_size": 1 << 20}
_SIZE = re.compile(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", re.IGNORECASE)
_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
_ENV_NAME = re.compile(r"[A-Za-z_*?\[\]!][A-Za-z0-9_*?\[\]!]*")


def parse_amount(key: str, value: Any) -> tuple[int | None, str | None]:
    """``(value, None)`` or ``(None, why it is wrong)`` for one limit."""
    if isinstance(value, str) and value.strip().lower() == "unlimited":
        return UNLIMITED, None
    if isinstance(value, bool):
        return None, "a number or \"unlimited\", not a boolean"
    if isinstance(value, int):
        amount = value
    elif isinstance(value, str) and key != "processes":
        match = _SIZE.fullmatch(value)
        if match is None:
            return None, f"a size such as \"512M\" or \"4G\" (or \"unlimited\"), not {value!r}"
        amount = int(match.group(1)) << _UNITS[match.group(2).upper()]
    else:
        what = "an integer" if key == "processes" else "an integer of bytes or a size such as \"4G\""
        return None, f"{what} (or \"unlimited\")"
    if amount < MINIMUMS[key]:
        return None, f"at least {MINIMUMS[key]} (a lower value would stop ordinary commands), not {amount}"
    return amount, None


def check_sandbox(ck: Any, data: dict[str, Any], source: str) -> dict[str, Any]:
    """The ``[sandbox]`` table of one file, validated (errors go to ``ck``)."""
    table = ck.table(data.get("sandbox", {}), ("sandbox",), SANDBOX_KEYS)
    if not table:
        return {}
    out: dict[str, Any] = {}
    if "env" in table:
        where = ("sandbox", "env")
        names = ck.strings(table["env"], where)
        if source == "project":
            ck.error("project-grants-environment", "`sandbox.env` in a project file: a repository may not hand "
                     "the sandbox your environment variables; grant them in your user file", where)
        elif names is not None:
            bad = [n for n in names if not _ENV_NAME.fullmatch(n)]
            if bad:
                ck.error("bad-value", f"`sandbox.env` entries must be variable names or patterns, not {bad[0]!r}", where)
            else:
                out["env"] = tuple(names)
    for key in LIMIT_KEYS:
        if key in table:
            amount, why = parse_amount(key, table[key])
            if why is not None:
                ck.error("bad-value", f"`sandbox.{key}` must be {why}", ("sandbox", key))
            else:
                out[key] = amount
    return out


def stricter(key: str, current: int, new: int) -> bool:
    """Whether limit ``new`` is lower than ``current`` (0: unlimited)."""
    if new == UNLIMITED:
        return False
    return current == UNLIMITED or new < current


def merge_sandbox(fields: dict[str, Any], source: str, layer: Mapping[str, Any]) -> None:
    """Fold one layer's ``[sandbox]`` into the merged fields; a project file may only lower a limit."""
    if "env" in layer:
        fields["sandbox_env"] = tuple(dict.fromkeys([*fields.get("sandbox_env", ()), *layer["env"]]))
    for key in LIMIT_KEYS:
        if key in layer:
            name = f"sandbox_{key}"
            current = fields.get(name, DEFAULTS[key])
            if source != "project" or stricter(key, current, layer[key]):
                fields[name] = layer[key]


def loosened(old: Any, new: Any) -> list[str]:
    """Why ``new``'s ``[sandbox]`` hands the command more than ``old``'s."""
    reasons = []
    if set(new.sandbox_env) - set(old.sandbox_env):
        reasons.append("sandbox.env grants more environment variables")
    for key in LIMIT_KEYS:
        name = f"sandbox_{key}"
        if stricter(key, getattr(new, name), getattr(old, name)):
            reasons.append(f"sandbox.{key} raised")
    return reasons
