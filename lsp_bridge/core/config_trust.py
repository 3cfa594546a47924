"""The configuration each project was last used with, kept outside every root.

An agent can write files inside its roots, and some of them decide the *next*
session's boundary: a nearer ``.rootguard.toml``, a ``.git`` that ends the upward
search for the project file (so the repository's deny rules are never found), a
changed or new user file. Root Guard keeps, per project root, the text and place of
every configuration file that applied when it was last used (the "approved"
configuration), in its own state directory (a protected target: no root, sandbox
or tool may write it). Each entry point (``ConfigKeeper``) reads the files on disk
and compares them with that record (``config.loosening``): a change that only keeps
or narrows what is allowed is applied and recorded at once; one that loosens it, where
the agent could have made it (a changed place inside the session's folders: a
nearer project file, a new ``.git``, a user file inside a folder), is *held* — the
recorded configuration stays in force — until the person approves it (``rootguard
config approve``, the tray, the editor). A change only the person could have made
(a file outside every folder: no tool, hook or sandbox lets the agent write there)
applies as before.

The first use of a root records what it finds (a project file can never widen access
beyond the editor's folders: its allows outside them are reduced to ``request``).

One file per root: ``<state dir>/approved/<sha256 of the root's canonical path>.json``,
written atomically (every spelling of a root, a symbolic link to it included, finds the one
record: another spelling must never count as a first use); the user file's record is kept with each root, because what it allows
is judged together with that root's project file.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from lsp_bridge.core.atomic import atomic_write
from lsp_bridge.core.paths import read_regular, realpath

MAX_RECORD_BYTES = 4 * 1024 * 1024  # two configuration files of at most 1 MiB each, and their paths
FORMAT = 1


@dataclass(frozen=True)
class ConfigFileText:
    """One configuration file as it was read: where, which source, its text."""

    source: str  # "user" | "project"
    path: str
    text: str


@dataclass(frozen=True)
class Recorded:
    """The configuration files that applied to one root (what ``load_config`` read), ``stop``: the
    directory where the upward search for the project file stopped (the one holding ``.git``), and
    ``toolchain``: the toolchain mounts approved with them (``core.toolchain``; None: not recorded
    here, so ``TrustStore.record`` keeps the set already on record)."""

    files: tuple[ConfigFileText, ...] = ()
    stop: str | None = None
    toolchain: tuple[str, ...] | None = None

    def file(self, source: str) -> ConfigFileText | None:
        return next((f for f in self.files if f.source == source), None)

    def to_json(self) -> dict[str, Any]:
        return {"files": [{"source": f.source, "path": f.path, "text": f.text} for f in self.files],
                "stop": self.stop, "toolchain": None if self.toolchain is None else list(self.toolchain)}

    def changed_places(self, other: Recorded) -> set[str]:
        """The paths where ``other`` differs from this record: a file added, removed or edited (both its
        places), and both places the search stopped at when that moved (a ``.git`` made or removed)."""
        places: set[str] = set()
        for source in ("user", "project"):
            mine, theirs = self.file(source), other.file(source)
            if mine != theirs:
                places.update(f.path for f in (mine, theirs) if f is not None)
        if self.stop != other.stop:
            places.update(p for p in (self.stop, other.stop) if p is not None)
        return places


def record_key(root: str | None) -> str:
    """The name a root's record is kept under: its canonical path (``""`` for no root). A relative
    root (never one Root Guard uses) is kept as given rather than read against the current directory."""
    if not root:
        return ""
    if not os.path.isabs(root) or "\x00" in root:
        return root
    return realpath(root)


class RecordError(ValueError):
    """A record that cannot be read back; the message names the file."""


class TrustStore:
    """The approved configuration of every root, one file each in ``directory``."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    @classmethod
    def default(cls) -> TrustStore:
        import platformdirs

        return cls(os.path.join(platformdirs.user_state_dir("rootguard"), "approved"))

    def path_for(self, root: str | None) -> str:
        digest = hashlib.sha256(record_key(root).encode("utf-8", "surrogateescape")).hexdigest()
        return os.path.join(self.directory, f"{digest}.json")

    def recorded(self, root: str | None) -> Recorded | None:
        """What ``root`` was last used with; None when it never was. ``RecordError`` for a damaged record."""
        path = self.path_for(root)
        if not os.path.lexists(path):
            return None
        data = read_regular(path, MAX_RECORD_BYTES + 1)
        if data is None or len(data) > MAX_RECORD_BYTES:
            raise RecordError(f"{path}: not a readable regular file of at most {MAX_RECORD_BYTES} bytes")
        try:
            document = json.loads(data)
            if document.get("format") != FORMAT or document.get("root") != record_key(root):
                raise ValueError("another format or another root")
            files = tuple(ConfigFileText(str(f["source"]), str(f["path"]), str(f["text"]))
                          for f in document["files"] if f["source"] in ("user", "project"))
            stop = document.get("stop")
            toolchain = document.get("toolchain")
            if toolchain is not None:
                toolchain = tuple(str(p) for p in toolchain if isinstance(p, str))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RecordError(f"{path}: not a record Root Guard wrote ({exc})") from None
        return Recorded(files, stop if isinstance(stop, str) else None, toolchain)

    def record(self, root: str | None, recorded: Recorded) -> None:
        """Keep ``recorded`` as ``root``'s approved configuration (atomically; the directory is private).
        Without a toolchain set of its own, the one on record stays."""
        if recorded.toolchain is None:
            try:
                kept = self.recorded(root)
            except (RecordError, OSError):
                kept = None
            if kept is not None and kept.toolchain is not None:
                recorded = Recorded(recorded.files, recorded.stop, kept.toolchain)
        document = {"format": FORMAT, "root": record_key(root), **recorded.to_json()}
        text = json.dumps(document, ensure_ascii=False, indent=1) + "\n"
        path = self.path_for(root)
        if read_regular(path, MAX_RECORD_BYTES + 1) == text.encode("utf-8", "surrogateescape"):
            return  # unchanged: no write (every short command records what it used)
        atomic_write(path, text, mode=0o600, dir_mode=0o700)
