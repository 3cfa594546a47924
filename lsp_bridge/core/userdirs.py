"""The user's configuration and cache directories, without importing platformdirs on Linux.

``platformdirs`` stays the answer everywhere; importing it costs ~10 ms of a
command's start (it pulls in ``pathlib``, ``tempfile`` and ``shutil``), more
than ``rootguard check`` itself. On Linux its answer for a plain user is the XDG
rule, computed here the same way: ``$XDG_CONFIG_HOME`` (``_CACHE_``, ``_STATE_``)
when it is absolute, else ``$HOME/.config`` (``.cache``, ``.local/state``) when
``HOME`` is absolute, then ``/rootguard``. Anything else -- another system, an Android
environment, a relative or missing ``HOME`` -- asks platformdirs itself.
tests/test_cli_speed.py checks that both give the same answer.
"""

from __future__ import annotations

import os
import sys

APP = "rootguard"
_HOME_DEFAULTS = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state"}


def _fast(variable: str) -> str | None:
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel") or os.environ.get("ANDROID_DATA"):
        return None
    xdg = os.environ.get(variable, "")
    if xdg.startswith("/"):
        return os.path.join(xdg, APP)
    home = os.environ.get("HOME")
    if not home or not home.startswith("/"):
        return None
    return os.path.join(os.path.expanduser("~/" + _HOME_DEFAULTS[variable]), APP)


def user_config_dir() -> str:
    """``platformdirs.user_config_dir("rootguard")``."""
    fast = _fast("XDG_CONFIG_HOME")
    if fast is not None:
        return fast
    import platformdirs

    return platformdirs.user_config_dir(APP)


def user_cache_dir() -> str:
    """``platformdirs.user_cache_dir("rootguard")``."""
    fast = _fast("XDG_CACHE_HOME")
    if fast is not None:
        return fast
    import platformdirs

    return platformdirs.user_cache_dir(APP)


def user_state_dir() -> str:
    """``platformdirs.user_state_dir("rootguard")``."""
    fast = _fast("XDG_STATE_HOME")
    if fast is not None:
        return fast
    import platformdirs

    return platformdirs.user_state_dir(APP)
