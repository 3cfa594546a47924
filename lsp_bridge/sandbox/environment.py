"""What the sandboxed command gets besides files: its environment and its home.

**Environment.** Only an allow-list of the caller's variables passes (``ALLOWED``,
the ``LC_*`` locale variables), plus those ``[sandbox] env`` grants in the user
file (names or ``fnmatch`` patterns). A variable whose name looks like a secret
(``is_secret_name``: ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*_KEY``,
``AWS_*``...) passes only when a grant names it exactly, never through a pattern.
``HOME``, ``TMPDIR`` and the ``XDG_*`` base directories are set to the sandbox's
own: the private home below, ``/tmp``.

**Home.** Unless the home folder is in the union, the sandbox gets a private,
writable, empty tmpfs at ``$HOME`` (gone when the command ends), with the caches
(``XDG_CACHE_HOME``...) inside it, and a few harmless dotfiles (``HOME_FILES``:
``~/.gitconfig``, git's XDG files, ``~/.inputrc``, ``~/.editorconfig``) bound
read-only when the policy lets the command read them (no rule denies or asks for
them) and they hold no credential (the inventory's detector). ``~/.npmrc``,
``~/.aws``, ``~/.ssh`` and every other name are never mounted by this; a
``[[paths]]`` rule that allows reading one mounts it like any other rule.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping, Sequence

ALLOWED = frozenset({
    "PATH", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "TERM_PROGRAM", "LANG", "LANGUAGE", "TZ",
    "EDITOR", "VISUAL", "PAGER", "LESS", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CI",
    "SOURCE_DATE_EPOCH", "NODE_ENV", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "GIT_PAGER",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CEILING_DIRECTORIES", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_EDITOR",
    "GIT_TERMINAL_PROMPT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
    # certificate bundles (paths, which the files still have to be mounted for)
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
})
_UNSHOWN = frozenset({"HOME", "PWD", "OLDPWD", "SHLVL", "_", "TMPDIR"})  # set inside, or the shell's own
ALLOWED_PREFIXES = ("LC_",)
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|COOKIE|SESSION|AUTH(?!OR)|APIKEY|API_KEY|ACCESS_KEY"
                     r"|_KEY$|^KEY$|^AWS_|^AZURE_|^GCP_|^GOOGLE_APPLICATION|^VAULT_|^OP_|^NPM_CONFIG__", re.IGNORECASE)
HOME_FILES = (".gitconfig", ".config/git/config", ".config/git/ignore", ".config/git/attributes", ".inputrc",
              ".editorconfig")


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential (``GITHUB_TOKEN``, ``AWS_ACCESS_KEY_ID``...)."""
    return bool(_SECRET.search(name))


def sandbox_env(host: Mapping[str, str], grants: Sequence[str], home: str) -> tuple[dict[str, str], list[str]]:
    """The command's environment from the caller's; and the names left out (for ``--print``)."""
    out: dict[str, str] = {}
    dropped: list[str] = []
    for name, value in host.items():
        exact = name in grants
        if exact or (not is_secret_name(name) and (
                name in ALLOWED or name.startswith(ALLOWED_PREFIXES) or any(fnmatch.fnmatchcase(name, g) for g in grants))):
            out[name] = value
        elif name not in _UNSHOWN and not name.startswith("XDG_"):
            dropped.append(name)
    out.setdefault("PATH", os.defpath)
    out.update(sandbox_dirs(home), ROOTGUARD_SANDBOX="1")
    return out, sorted(dropped)


def sandbox_dirs(home: str) -> dict[str, str]:
    """``HOME``, ``TMPDIR`` and the XDG base directories inside the sandbox (set with ``--setenv``)."""
    return {"HOME": home, "TMPDIR": "/tmp", "XDG_CACHE_HOME": f"{home}/.cache", "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_DATA_HOME": f"{home}/.local/share", "XDG_STATE_HOME": f"{home}/.local/state"}


def home_dotfiles(home: str, readable: Callable[[str], str | None]) -> tuple[list[str], list[str]]:
    """The harmless dotfiles under ``home`` to bind read-only, and why each other one is left out.

    ``readable(path)``: why the policy does not let the command read it (None: it may)."""
    from lsp_bridge.inventory.secrets import count_credentials

    mounted: list[str] = []
    notes: list[str] = []
    for name in HOME_FILES:
        path = os.path.join(home, name)
        if os.path.islink(path) or not os.path.isfile(path) or not os.access(path, os.R_OK):
            continue  # a link is not followed; one the caller cannot read would stop bubblewrap
        why = readable(path)
        if why == "mounted by its rule":
            continue
        if why is not None:
            notes.append(f"{path} not mounted in the private home: {why}")
        elif count_credentials(path):
            notes.append(f"{path} not mounted in the private home: it holds a credential")
        else:
            mounted.append(path)
    return mounted, notes


__all__ = ["ALLOWED", "HOME_FILES", "home_dotfiles", "is_secret_name", "sandbox_env"]
