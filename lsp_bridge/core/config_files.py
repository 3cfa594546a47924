"""Where configuration files live, and reading one safely.

* the user file: ``<platformdirs user_config_dir("rootguard")>/config.toml``, or
  ``ROOTGUARD_CONFIG`` (absolute; it must then exist);
* the project file: the nearest ``.rootguard.toml`` from the project root upward,
  stopping at the directory that holds ``.git`` (that directory is checked, its
  parents are not); without a ``.git`` above, only the project root is checked.

``config_candidates`` lists every path where a file *would* become active: the
watcher watches them and the policy engine protects every candidate (loaded or
not) as a protected target.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from lsp_bridge.core.diagnostics import Diagnostic, Range
from lsp_bridge.core.paths import canonical, open_regular
from lsp_bridge.core.settings import PROJECT_FILE_NAME
from lsp_bridge.core.toml_positions import _error, _shown

MAX_CONFIG_BYTES = 1024 * 1024
ENV_CONFIG = "ROOTGUARD_CONFIG"
ENV_ROOTS = "ROOTGUARD_ROOTS"


def user_config_path(env: Mapping[str, str] = os.environ) -> str:
    """The user file's path; ``ROOTGUARD_CONFIG`` overrides it (absolute only)."""
    override = env.get(ENV_CONFIG, "")
    if override.strip():
        if "\x00" in override:
            raise ValueError(f"{ENV_CONFIG} contains a NUL byte")
        expanded = os.path.expanduser(override)
        if not os.path.isabs(expanded):
            raise ValueError(f"{ENV_CONFIG} must be an absolute path, got {_shown(override)}")
        return os.path.normpath(expanded)
    import platformdirs

    return os.path.join(platformdirs.user_config_dir("rootguard"), "config.toml")


def _search_dirs(start: str) -> list[str]:
    """Directories checked for a project file: start up to the one holding ``.git``."""
    chain = [start]
    current = start
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return chain
        parent = os.path.dirname(current)
        if parent == current:
            return [start]  # no repository above: never walk to the top
        current = parent
        chain.append(current)


def search_stop(start: str) -> str:
    """Where the upward search for the project file stops: the directory holding ``.git``, or ``start``."""
    return _search_dirs(canonical(start))[-1]


def find_project_config(start: str) -> str | None:
    """The nearest ``.rootguard.toml`` from ``start`` (absolute) up to the git top."""
    for directory in _search_dirs(canonical(start)):
        candidate = os.path.join(directory, PROJECT_FILE_NAME)
        if os.path.lexists(candidate):  # a broken link or a directory is an error later
            return candidate
    return None


def config_candidates(project_root: str | None, env: Mapping[str, str] = os.environ) -> list[str]:
    """Every path where a configuration file would become active (to watch or protect)."""
    found: list[str] = []
    try:
        found.append(user_config_path(env))
    except ValueError:
        pass
    if project_root is not None and os.path.isabs(project_root):
        found += [os.path.join(d, PROJECT_FILE_NAME) for d in _search_dirs(canonical(project_root))]
    return found




def read_config_text(path: str) -> tuple[str | None, Diagnostic | None]:
    """The file's text, or a diagnostic naming it (missing, not a file, too big, not UTF-8)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, _error("config-missing", f"configuration file not found: {path}", path)
    except OSError as exc:
        return None, _error("config-unreadable", f"cannot read configuration file {path}: {exc.strerror}", path)
    if stat.S_ISDIR(info.st_mode):
        return None, _error("config-unreadable", f"configuration file {path} is a directory", path)
    if not stat.S_ISREG(info.st_mode):
        return None, _error("config-unreadable", f"configuration file {path} is not a regular file", path)
    if info.st_size > MAX_CONFIG_BYTES:
        return None, _too_large(path)
    try:  # never waits: a FIFO swapped in since the stat is refused, not opened
        fd = open_regular(path, os.O_RDONLY)
        try:
            with open(fd, "rb", closefd=False) as handle:
                data = handle.read(MAX_CONFIG_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        return None, _error("config-unreadable", f"cannot read configuration file {path}: {exc.strerror}", path)
    if len(data) > MAX_CONFIG_BYTES:
        return None, _too_large(path)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n")
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        message = f"configuration file {path} is not UTF-8"
        return None, _error("config-encoding", message, path, Range.point(line, column))


def _too_large(path: str) -> Diagnostic:
    return _error("config-too-large", f"configuration file {path} is larger than {MAX_CONFIG_BYTES} bytes", path)

