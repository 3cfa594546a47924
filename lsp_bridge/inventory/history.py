"""Git history of a repository the union reaches: where it is, its size, commits and lost files.

Where: ``common_dir_of(checkout)`` asks ``core.worktrees.locate`` -- the one
validated ``.git`` discovery (a ``.git`` file is followed only when its target
points back at it; ``gitdir: /`` and other implausible targets are refused).
What: git runs in its own processes (``_History``), read while the tree is
walked: the commit count, credential-named files deleted from history, and
those renamed (kept apart: a move whose content is still in the tree is not a
lost secret, but a credential renamed *away* from a credential name is shown).

Nothing here returns a file's contents: names and counts only.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from lsp_bridge.core.atomic import write_cache
from lsp_bridge.core.change_key import stable_key
from lsp_bridge.core.git import git_env
from lsp_bridge.core.paths import read_regular
from lsp_bridge.inventory.model import Renamed
from lsp_bridge.inventory.secrets import is_credential_name

GIT_TIMEOUT = 30.0
# Git processes running at once: a folder of fifty repositories reads their
# histories a few at a time, not all together.
_GIT_SLOTS = threading.BoundedSemaphore(4)
T = TypeVar("T")
_HASH = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


# ---------------------------------------------------------------- where


def common_dir_of(checkout: str) -> tuple[str | None, str | None]:
    """(common git dir, None) for the ``.git`` directly in ``checkout``; (None, why) when refused.

    (None, None) when ``checkout`` holds no ``.git``.
    """
    if not os.path.lexists(os.path.join(checkout, ".git")):
        return None, None
    from lsp_bridge.core import worktrees  # here, not at import: importing the inventory stays cheap

    try:
        found = worktrees.locate(checkout)
    except (OSError, ValueError) as err:
        return None, f"{os.path.join(checkout, '.git')}: {err}"
    if found.status == "found" and found.location is not None:
        return found.location.common_dir, None
    problems = [d for d in found.diagnostics if d.severity in ("error", "warning")]
    why = problems[-1].message if problems else "not a usable git directory"
    return None, f"{os.path.join(checkout, '.git')}: {why}"


def enclosing_checkout(path: str) -> str | None:
    """The directory holding the last ``.git`` component of ``path`` (``/r`` for ``/r/.git/x``)."""
    parts = path.split(os.sep)
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] == ".git":
            return os.sep.join(parts[:index]) or os.sep
    return None


def git_key(common: str) -> tuple:
    """Changes when a ref moves or objects arrive (commit, fetch, gc)."""
    return tuple(_mtime(os.path.join(common, name)) for name in _GIT_KEY_FILES)


_GIT_KEY_FILES = ("HEAD", "packed-refs", "FETCH_HEAD", os.path.join("logs", "HEAD"),
                  os.path.join("refs", "heads"), os.path.join("objects", "pack"))


def _mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return -1


def disk_usage(top: str, counter: list[int] | None = None) -> int:
    """Apparent size of ``top`` like ``du -sb``: files, directories and links, once per inode."""
    try:
        total = os.lstat(top).st_size
    except OSError:
        return 0
    seen_inodes: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        path = stack.pop()
        if counter is not None:
            counter[0] += 1
        try:
            with os.scandir(path) as listing:
                items = list(listing)
        except OSError:
            continue
        for item in items:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:  # gone since the listing (git gc, a fetch)
                continue
            if item.is_dir(follow_symlinks=False):
                stack.append(item.path)
            elif info.st_nlink > 1:
                inode = (info.st_dev, info.st_ino)
                if inode in seen_inodes:
                    continue
                seen_inodes.add(inode)
            total += info.st_size
    return total


# ---------------------------------------------------------------- what

class _History:
    """Commit count and deleted credential files of one repository, read in the background.

    Git runs in its own processes, so the history is read while the tree is
    walked; ``result()`` waits for both answers. ``key`` is the ``_git_key``
    the reading started from. ``persistent``: answers are kept between runs in
    the user's cache directory, keyed by every ref (``HistoryStore``), so a
    second ``rootguard inventory`` of an unchanged repository runs one cheap git
    command instead of reading the whole history again (none while the files that
    hold the refs are unchanged: ``refs_stat``).
    """

    def __init__(self, common: str, key: tuple, *, persistent: bool = False) -> None:
        self.key = key
        if persistent:
            both = _in_background(_stored_history, common)
            self._commits: Callable[[], int | None] = lambda: (both() or (None, None))[0]
            self._lost: Callable[[], Lost | None] = lambda: (both() or (None, None))[1]
        else:
            self._commits = _in_background(_commit_count, common)
            self._lost = _in_background(_lost_sensitive, common)

    def result(self) -> tuple[int | None, Lost | None]:
        return self._commits(), self._lost()


# ---------------------------------------------------------------- kept between runs
#
# What the history holds is a function of the commits every ref points at: ``git log --all``
# and ``rev-list --all`` read nothing else (plus the shallow boundary). So the answers are kept
# under a digest of ``git show-ref --head`` (every ref and HEAD, one cheap git process) and of
# ``shallow``, and reused only while that digest is the same. The digest is taken again after
# a fresh reading and the answers are stored only when no ref moved meanwhile; git failures
# ("could not tell") are never stored. The credential-name rules are part of the key, so a
# release that changes them reads again.
#
# Even that git process is spared while the files that hold the refs are unchanged
# (``refs_stat``): git writes a ref, HEAD, ``packed-refs`` and ``shallow`` to a lock file and
# renames it over the old one (a new inode, the directory changed), and a hand edit in place
# changes the file's mtime and ctime; each is kept with its ``change_key.stable_key``.

_STORE_FORMAT = 2  # 2: deleted names holding a newline are listed (1 left them out)
_STORE_LIMIT = 64  # repositories remembered; the oldest entry goes first
_store_lock = threading.Lock()


def refs_digest(common: str) -> str | None:
    """Every ref, HEAD and the shallow boundary of ``common``, with the credential-name rules:
    the text itself when short (most repositories), else its SHA-256. None when git cannot tell."""
    out = _git(common, "show-ref", "--head")
    if out is None:  # exit 1: no ref at all (a new repository): nothing worth keeping
        return None
    # --all also reads the HEAD of every linked worktree (a detached one is on no ref).
    for name in sorted(_listdir(os.path.join(common, "worktrees"))):
        out += b"\0worktree\0" + name.encode("utf-8", "surrogateescape") + b"\0"
        out += _read_small(os.path.join(common, "worktrees", name, "HEAD"))
    out += b"\0shallow\0" + _read_small(os.path.join(common, "shallow"), limit=1 << 20)
    rules = _rules().encode()
    if len(out) <= 16384:  # hashlib's import (OpenSSL) costs more than keeping the text
        return (out + rules).decode("utf-8", errors="surrogateescape")
    import hashlib

    return "sha256:" + hashlib.sha256(out + rules).hexdigest()


def _rules() -> str:
    """What the kept answers also depend on: the store's format and the credential-name rules."""
    from lsp_bridge.inventory.secrets import CREDENTIAL_NAME_PATTERN, CREDENTIAL_PARENTS

    return f"\0{_STORE_FORMAT}\0{CREDENTIAL_NAME_PATTERN}\0{sorted(CREDENTIAL_PARENTS)}"


_REF_FILES = ("HEAD", "packed-refs", "shallow")
_REF_TREES = ("refs", "reftable")


def refs_stat(common: str) -> list | None:
    """The stable keys of where ``common`` keeps its refs: ``HEAD``, ``packed-refs``, ``shallow``
    (``[name]`` when absent), every directory and file below ``refs/`` and ``reftable/``, the
    ``worktrees/`` directory and each linked worktree's ``HEAD``; then the rules (``_rules``).
    None when one of them changed too recently, or lives on a file system, for its key to tell
    a later change (``change_key.stable_key``), or is a symbolic link (what it points at could
    change unseen): then only git can say whether a ref moved."""
    now = time.time_ns()
    found: list = []

    def add(relative: str, info: os.stat_result | None) -> bool:
        if info is None:
            found.append([relative])
            return True
        if stat.S_ISLNK(info.st_mode):  # git follows it; a change where it points would not show here
            return False
        key = stable_key(info, now)
        if key is None:
            return False
        found.append([relative, *key])
        return True

    def lstat(relative: str) -> os.stat_result | None:
        try:
            return os.lstat(os.path.join(common, relative))
        except FileNotFoundError:
            return None

    try:
        for name in _REF_FILES:
            if not add(name, lstat(name)):
                return None
        worktrees = lstat("worktrees")
        if not add("worktrees", worktrees):
            return None
        if worktrees is not None:
            for name in sorted(_listdir(os.path.join(common, "worktrees"))):
                if not add(f"worktrees/{name}/HEAD", lstat(os.path.join("worktrees", name, "HEAD"))):
                    return None
        for tree in _REF_TREES:
            info = lstat(tree)
            if not add(tree, info):
                return None
            stack = [tree] if info is not None and stat.S_ISDIR(info.st_mode) else []
            while stack:
                relative = stack.pop()
                with os.scandir(os.path.join(common, relative)) as listing:
                    items = sorted(listing, key=lambda item: item.name)
                for item in items:
                    child = f"{relative}/{item.name}"
                    if not add(child, item.stat(follow_symlinks=False)):
                        return None
                    if item.is_dir(follow_symlinks=False):
                        stack.append(child)
    except OSError:
        return None
    return [_rules(), *found]


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _read_small(path: str, limit: int = 4096) -> bytes:
    """Up to ``limit`` bytes of a file (a longer one: its size and time instead); b"" when absent;
    a marker when it is not a regular file (never opened: a FIFO would block the reader)."""
    try:
        info = os.lstat(path)
    except OSError:
        return b""
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file {stat.S_IFMT(info.st_mode)}".encode()
    if info.st_size > limit:
        return f"size {info.st_size} mtime {info.st_mtime_ns}".encode()
    data = read_regular(path, limit)
    return b"" if data is None else data


def _store_path() -> str | None:
    import platformdirs

    try:
        return os.path.join(platformdirs.user_cache_dir("rootguard"), "git-history.json")
    except (ImportError, RuntimeError):
        return None


def _read_store(path: str) -> dict:
    from lsp_bridge.core.atomic import read_cache

    data = read_cache(path)
    if not isinstance(data, dict) or data.get("format") != _STORE_FORMAT or not isinstance(data.get("repos"), dict):
        return {}
    return data["repos"]


def _decode(entry: dict) -> tuple[int, Lost] | None:
    """The kept answers, or None when the entry is not exactly what ``_save`` writes."""
    commits, deleted, renamed = entry.get("commits"), entry.get("deleted"), entry.get("renamed")
    if type(commits) is not int or not isinstance(deleted, list) or not isinstance(renamed, list):
        return None
    if not all(isinstance(n, str) for n in deleted):
        return None
    moves = []
    for item in renamed:
        if not (isinstance(item, list) and len(item) == 4 and all(isinstance(x, str) for x in item[:2])
                and all(isinstance(x, bool) for x in item[2:])):
            return None
        moves.append(Renamed(*item))
    return commits, (tuple(deleted), tuple(moves))


def _stored_history(common: str) -> tuple[int | None, Lost | None]:
    """(commits, lost) from the store when every ref is where it was, else read and stored.
    Where the files holding the refs are as they were kept (``refs_stat``), no git runs at all."""
    path = _store_path()
    if not path:
        return _read_history(common)
    entry = _read_store(path).get(common)
    stats = refs_stat(common)  # before the digest: a ref moving in between is caught next time
    if stats is not None and isinstance(entry, dict) and entry.get("refs_stat") == stats:
        found = _decode(entry)
        if found is not None:
            return found
    key = refs_digest(common)
    if not key:
        return _read_history(common)
    if isinstance(entry, dict) and entry.get("key") == key:
        found = _decode(entry)
        if found is not None:
            if stats is not None:  # the next run need not ask git
                _save(path, common, key, *found, stats)
            return found
    commits, lost = _read_history(common)
    if commits is not None and lost is not None and refs_digest(common) == key:
        _save(path, common, key, commits, lost, stats)
    return commits, lost


def _read_history(common: str) -> tuple[int | None, Lost | None]:
    counted = _in_background(_commit_count, common)
    lost = _lost_sensitive(common)
    return counted(), lost


def _save(path: str, common: str, key: str, commits: int, lost: Lost, stats: list | None) -> None:
    import json

    deleted, renamed = lost
    entry = {"key": key, "commits": commits, "deleted": list(deleted), "saved": time.time(),
             "renamed": [[r.source, r.dest, r.dest_in_tree, r.dest_is_credential_name] for r in renamed]}
    if stats is not None:
        entry["refs_stat"] = stats
    with _store_lock:
        repos = _read_store(path)
        repos[common] = entry
        if len(repos) > _STORE_LIMIT:
            oldest = sorted(repos, key=lambda k: repos[k].get("saved", 0) if isinstance(repos[k], dict) else 0)
            for gone in oldest[: len(repos) - _STORE_LIMIT]:
                del repos[gone]
        # not kept when it cannot be written: the next run reads the history again
        write_cache(path, json.dumps({"format": _STORE_FORMAT, "repos": repos}))


def _in_background(function: Callable[..., T], *args: object) -> Callable[[], T | None]:
    """Start ``function(*args)`` in a daemon thread; the returned callable waits for its value.

    The value is None when the function raised: for git that means "could not tell".
    """
    box: list[T | None] = [None]

    def run() -> None:
        try:
            box[0] = function(*args)
        except Exception:  # reported as unknown, never as "none"
            box[0] = None

    thread = threading.Thread(target=run, name="rootguard-git", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to spare: answer now
        run()
        return lambda: box[0]

    def wait() -> T | None:
        thread.join()
        return box[0]

    return wait


# Files git opens when it reads a history (besides refs and objects, which git writes
# itself): one that is a FIFO or a device makes git wait for a writer until GIT_TIMEOUT.
_GIT_READS = ("HEAD", "config", "packed-refs", "shallow", "commondir", "info/grafts",
              "objects/info/alternates")


_REFS_CHECKED = 10_000  # loose refs looked at; a repository with more keeps most in packed-refs


def _special_file(common: str) -> str | None:
    """The first of ``_GIT_READS`` in ``common``, or of the loose refs below ``refs/``, that
    exists and is not a regular file or directory (links followed, as git follows them), else
    None. At most ``_REFS_CHECKED`` loose refs are looked at."""
    for name in _GIT_READS:
        try:
            mode = os.stat(os.path.join(common, name)).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return name
    seen = 0
    stack = [os.path.join(common, "refs")]
    while stack and seen < _REFS_CHECKED:
        try:
            with os.scandir(stack.pop()) as listing:
                items = list(listing)
        except OSError:
            continue
        for item in items:
            seen += 1
            try:
                mode = item.stat().st_mode  # a link to a FIFO is one too
            except OSError:
                continue
            if stat.S_ISDIR(mode) and not item.is_symlink():
                stack.append(item.path)
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return os.path.relpath(item.path, common)
    return None


# What git would otherwise take from the repository's own configuration: its file-system monitor,
# and any fetch (a partial clone fetches a missing object from its "promisor" remote, through the
# repository's ``core.sshCommand`` or an ``ext::`` URL: code the repository chose).
_NO_REPOSITORY_CODE = ("core.fsmonitor=false", "log.showSignature=false", "core.sshCommand=false", "protocol.allow=never",
                       *(f"protocol.{name}.allow=never" for name in ("ext", "file", "ssh", "git", "http", "https")))
_FETCHES_ON_DEMAND = r"^(extensions\.partialclone|remote\..*\.promisor|remote\..*\.partialclonefilter)$"


def _git(common: str, *args: str, data: bytes | None = None) -> bytes | None:
    """Run a read-only git command against ``common``; None on any failure, and at once (no
    git at all) when a file git reads first is a FIFO or a device (``_special_file``), or when
    the repository is a partial clone (``_fetches_on_demand``)."""
    if _special_file(common) is not None or _fetches_on_demand(common):
        return None
    options = [part for setting in _NO_REPOSITORY_CODE for part in ("-c", setting)]
    return _run_git(["git", f"--git-dir={common}", *options, *args], data)


def _fetches_on_demand(common: str) -> bool:
    """Whether git reading this repository's history could fetch from a remote: a partial clone
    (``extensions.partialClone``, a promisor remote) fetches each missing object on demand, running
    what the repository's own configuration names. Such a history is not read (shown as unknown);
    when the configuration cannot be read, neither."""
    found = _run_git(["git", f"--git-dir={common}", "config", "--get-regexp", _FETCHES_ON_DEMAND], None,
                     accept=(0, 1))
    return found is None or bool(found.strip())


def _run_git(command: list[str], data: bytes | None, accept: tuple[int, ...] = (0,)) -> bytes | None:
    import subprocess  # not imported by a run whose history is kept and whose refs did not move

    try:
        with _GIT_SLOTS:
            result = subprocess.run(command, input=data, capture_output=True, env=git_env(),
                                    timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode in accept else None


def _commit_count(common: str) -> int | None:
    out = _git(common, "rev-list", "--all", "--count")
    try:
        return int(out.strip()) if out is not None else None
    except ValueError:
        return None


Lost = tuple[tuple[str, ...], tuple[Renamed, ...]]
_SPLIT_NAME_LIMIT = 1000  # names holding a newline checked against HEAD (one git process, argv)


def _lost_sensitive(common: str) -> Lost | None:
    """(deleted, renamed) credential-named files gone from HEAD (names only).

    None when git failed or timed out: "we could not tell" is never shown as
    "none". A fast pass without rename detection finds the commits that removed
    a credential-named path; only those commits are diffed again with rename
    detection, to tell a deletion from a move.
    """
    out = _git(common, "log", "--all", "--no-renames", "--diff-filter=D", "--name-only",
               "-z", "--format=%x01%H")
    if out is None:
        return None
    commits: list[str] = []
    names: set[str] = set()
    for chunk in out.decode("utf-8", errors="replace").split("\x01")[1:]:
        commit, _, rest = chunk.partition("\x00")  # "HASH\0\nNAME\0NAME\0": a name may hold "\n"
        found = {n for n in rest.removeprefix("\n").split("\x00") if n and _is_sensitive_name(n)}
        if found and _HASH.fullmatch(commit.strip()):
            commits.append(commit.strip())
            names |= found
    names_gone = _missing_from_head(common, sorted(names))
    if names_gone is None:
        return None
    if not names_gone:
        return (), ()
    moved = _renames(common, commits, set(names_gone))
    if moved is None:
        return tuple(names_gone), ()
    deleted_outright, renames = moved
    renamed_only = {source for source in renames if source not in deleted_outright}
    present = set(_present_in_head(common, sorted({renames[s] for s in renamed_only})) or ())
    renamed = tuple(
        Renamed(source, renames[source], renames[source] in present,
                _is_sensitive_name(renames[source]))
        for source in sorted(renamed_only))
    deleted = tuple(n for n in names_gone if n not in renamed_only)
    return deleted, renamed


def _renames(common: str, commits: list[str], wanted: set[str]) -> tuple[set[str], dict[str, str]] | None:
    """(deleted outright, {old: new}) for ``wanted`` paths in ``commits``, renames detected."""
    if not commits:
        return set(), {}
    out = _git(common, "diff-tree", "--stdin", "--no-commit-id", "-r", "-M", "--name-status", "-z",
               data="".join(c + "\n" for c in commits).encode())
    if out is None:
        return None
    tokens = out.decode("utf-8", errors="replace").split("\x00")
    deleted: set[str] = set()
    renames: dict[str, str] = {}
    index = 0
    while index < len(tokens):
        status = tokens[index]
        if status.startswith(("R", "C")) and index + 2 < len(tokens):
            source, dest = tokens[index + 1], tokens[index + 2]
            if status.startswith("R") and source in wanted:
                renames.setdefault(source, dest)
            index += 3
        elif status and index + 1 < len(tokens):
            if status == "D" and tokens[index + 1] in wanted:
                deleted.add(tokens[index + 1])
            index += 2
        else:
            index += 1
    return deleted, renames


def _head_check(common: str, names: list[str]) -> list[bool] | None:
    """For each name, whether HEAD has it (None when git could not tell)."""
    # cat-file reads one name a line: a name holding a newline is asked of ls-tree (argv, literal).
    plain = [n for n in names if "\n" not in n]
    split = [n for n in names if "\n" in n]
    present: set[str] = set()
    if plain:
        query = "".join(f"HEAD:{n}\n" for n in plain).encode()
        answer = _git(common, "cat-file", "--batch-check", data=query)
        if answer is None:
            return None
        lines = answer.decode("utf-8", errors="replace").splitlines()
        if len(lines) != len(plain):
            return None
        present |= {n for n, line in zip(plain, lines, strict=True) if not line.endswith(" missing")}
    if split:
        # past the limit a name counts as gone from HEAD: listed as deleted rather than left out
        listed = _git(common, "--literal-pathspecs", "ls-tree", "-z", "--name-only", "HEAD", "--",
                      *split[:_SPLIT_NAME_LIMIT])
        if listed is None:
            return None
        present |= set(listed.decode("utf-8", errors="replace").split("\x00"))
    return [n in present for n in names]


def _missing_from_head(common: str, names: list[str]) -> list[str] | None:
    present = _head_check(common, names)
    if present is None:
        return names if names else []
    return [n for n, here in zip(names, present, strict=True) if not here]


def _present_in_head(common: str, names: list[str]) -> list[str] | None:
    present = _head_check(common, names)
    return None if present is None else [n for n, here in zip(names, present, strict=True) if here]


def _is_sensitive_name(relative: str) -> bool:
    parts = relative.split("/")
    return is_credential_name(parts[-1], parts[-2] if len(parts) > 1 else "")
