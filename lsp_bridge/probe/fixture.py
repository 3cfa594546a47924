"""The probe's fixture: a narrow root and the ways out of it, in one temporary directory.

```
BASE/                      (random name, tempfile.mkdtemp)
  R/                       the narrow root the server is started with (random name)
    I.txt                  a file inside
    S/N.txt                a nested file
    L1 -> ../O/X.txt       symlink inside pointing out
    L2 -> ../O
    D1 -> ../O/M.txt       dangling (does not exist)
    D2 -> ../O/MD          dangling directory
  R<suffix>/X.txt          prefix sibling: its name starts with the root's name
  O/X.txt                  the outside secret, holding the marker
  O/<token>.txt            a file whose *name* is the listing token
```

Every name is random per run, and so are the marker and the token (plain hex, no
prefix): a server cannot recognise the probe by its names or its content. Every
outside file holds the content marker; the listing token appears only in names.
Neither appears in any target path, so an error message that echoes the path is
never mistaken for a leak.

The fixture is built, checked and reset through directory descriptors only: the
base directory is opened once (``O_DIRECTORY | O_NOFOLLOW``) and every later
operation is relative to a descriptor (``dir_fd=``, ``os.fwalk``), with
``O_NOFOLLOW`` on every open. A server that renames the base, or swaps the root or any
directory in it for a symbolic link, makes the probe remove the link, never write or
delete through it. The probe never writes outside BASE.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass, field

KINDS = ("inside", "outside", "prefix_sibling", "traversal", "encoded", "absolute", "symlink_out", "dangling")
KIND_HELP = {
    "inside": "a file in the root (expected: permitted)",
    "outside": "relative to the server's working directory (the fixture's base), outside the root",
    "prefix_sibling": "a sibling folder whose name starts with the root's name",
    "traversal": "the root followed by '..'",
    "encoded": "the root followed by a percent-encoded '..' (%2e%2e)",
    "absolute": "an absolute path outside the root",
    "symlink_out": "a symlink inside the root pointing outside",
    "dangling": "a symlink inside the root whose target (outside) does not exist",
}
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WORDS = ("notes", "docs", "work", "src", "data", "app", "site", "lib", "tools", "pkg", "misc", "core")


def _word() -> str:
    return secrets.choice(_WORDS) + secrets.token_hex(3)


def _names() -> dict[str, str]:
    root = _word()
    return {"root": root, "sibling": root + secrets.choice(("-old", "_bak", "2", "-x")) + secrets.token_hex(2),
            "outside": _word(), "secret": _word() + ".txt", "inside": _word() + ".txt", "sub": _word(),
            "nested": _word() + ".txt", "link_out": _word(), "link_out_dir": _word(), "dangling": _word(),
            "dangling_dir": _word(), "missing": _word() + ".txt", "missing_dir": _word(),
            "destination": _word() + ".txt"}


@dataclass
class Fixture:
    base: str
    fd: int = -1  # the base directory, opened once: every operation is relative to it
    names: dict[str, str] = field(default_factory=_names)
    marker: str = field(default_factory=lambda: secrets.token_hex(16))
    token: str = field(default_factory=lambda: secrets.token_hex(10))
    initial: dict[str, str] = field(default_factory=dict)  # the snapshot after building

    @property
    def root(self) -> str:
        return os.path.join(self.base, self.names["root"])

    @classmethod
    def create(cls) -> Fixture:
        base = os.path.realpath(tempfile.mkdtemp(prefix=_word() + "-"))
        fixture = cls(base, os.open(base, _DIR))
        fixture.build()
        fixture.initial = fixture.snapshot()
        return fixture

    # -- building, through descriptors --------------------------------------

    def build(self) -> None:
        n = self.names
        for rel in (n["root"], f"{n['root']}/{n['sub']}", n["sibling"], n["outside"]):
            self._mkdir(rel)
        self._write(f"{n['root']}/{n['inside']}", "probe inside the root\n")
        self._write(f"{n['root']}/{n['sub']}/{n['nested']}", "probe nested inside the root\n")
        self._write(f"{n['sibling']}/{n['secret']}", f"note {self.marker} sibling\n")
        self._write(f"{n['outside']}/{n['secret']}", f"note {self.marker}\n")
        self._write(f"{n['outside']}/{self.token}.txt", f"note {self.marker}\n")
        for name, target in (("link_out", f"../{n['outside']}/{n['secret']}"), ("link_out_dir", f"../{n['outside']}"),
                             ("dangling", f"../{n['outside']}/{n['missing']}"),
                             ("dangling_dir", f"../{n['outside']}/{n['missing_dir']}")):
            parent = self._open_dir(n["root"])
            try:
                os.symlink(target, n[name], dir_fd=parent)
            finally:
                os.close(parent)

    def _open_dir(self, rel: str) -> int:
        """A descriptor of BASE/rel, one component at a time, never following a link (ELOOP/ENOTDIR)."""
        fd = os.dup(self.fd)
        for part in [p for p in rel.split("/") if p]:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            finally:
                os.close(fd)
            fd = nxt
        return fd

    def _mkdir(self, rel: str) -> None:
        parent, name = os.path.split(rel)
        fd = self._open_dir(parent)
        try:
            os.mkdir(name, 0o700, dir_fd=fd)
        except FileExistsError:
            pass
        finally:
            os.close(fd)

    def _write(self, rel: str, text: str) -> None:
        parent, name = os.path.split(rel)
        dfd = self._open_dir(parent)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dfd)
        finally:
            os.close(dfd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)

    # -- looking, through descriptors ---------------------------------------

    def snapshot(self) -> dict[str, str]:
        """Every entry under BASE: type and content hash or link text (never following a link)."""
        seen: dict[str, str] = {}
        for top, dirs, files, dfd in os.fwalk(".", dir_fd=self.fd, follow_symlinks=False):
            for name in dirs + files:
                rel = os.path.normpath(os.path.join(top, name))
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except OSError as err:
                    seen[rel] = f"gone:{err.errno}"
                    continue
                if stat.S_ISLNK(st.st_mode):
                    seen[rel] = "link:" + os.readlink(name, dir_fd=dfd)
                elif stat.S_ISDIR(st.st_mode):
                    seen[rel] = "dir"
                elif stat.S_ISREG(st.st_mode):
                    data = self._read_at(dfd, name)
                    seen[rel] = "file:" + hashlib.sha256(data).hexdigest() if data is not None else "unreadable"
                else:
                    seen[rel] = f"special:{stat.S_IFMT(st.st_mode)}"  # a FIFO is never opened
        return seen

    @staticmethod
    def _read_at(dfd: int, name: str, limit: int = 1 << 20) -> bytes | None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return os.read(fd, limit)
        finally:
            os.close(fd)

    def changes_outside(self, now: dict[str, str]) -> list[str]:
        """Entries outside the root that were created, changed or removed since the start."""
        before = self.initial
        names = set(before) | set(now)
        return sorted(n for n in names if not self._in_root(n) and before.get(n) != now.get(n))

    def marker_in_root(self) -> list[str]:
        """Files in the root (not links) that now hold outside content."""
        found = []
        try:
            root = self._open_dir(self.names["root"])
        except OSError:
            return []  # swapped: ``changes_outside`` reports it
        try:
            for top, _dirs, files, dfd in os.fwalk(".", dir_fd=root, follow_symlinks=False):
                for name in files:
                    data = self._read_at(dfd, name)
                    if data is not None and self.marker.encode() in data:
                        found.append(os.path.normpath(os.path.join(self.names["root"], top, name)))
        finally:
            os.close(root)
        return found

    def _in_root(self, rel: str) -> bool:
        root = self.names["root"]
        return rel.startswith(root + os.sep) and self.initial.get(root) == "dir"

    # -- resetting, through descriptors -------------------------------------

    def reset(self) -> None:
        """Back to the initial state when a call changed anything: everything under BASE is removed
        through descriptors (a link is removed, never followed) and built again."""
        if self.snapshot() == self.initial:
            return
        _clear(self.fd)
        self.build()

    def remove(self) -> None:
        """Empty BASE through its descriptor, then remove it if the path still names that directory."""
        if self.fd < 0:
            return
        try:
            _clear(self.fd)
            mine = os.fstat(self.fd)
            try:
                there = os.stat(self.base, follow_symlinks=False)
                if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                    os.rmdir(self.base)
            except OSError:
                pass
        finally:
            os.close(self.fd)
            self.fd = -1

    def describe(self, rel: str) -> str:
        """What a path below BASE is, in the fixed words of the documentation (the names are random)."""
        n = self.names
        table = {n["sibling"]: "prefix_sibling/", f"{n['sibling']}/{n['secret']}": "prefix_sibling/secret.txt",
                 n["outside"]: "outside/", f"{n['outside']}/{n['secret']}": "outside/secret.txt",
                 f"{n['outside']}/{self.token}.txt": "outside/<token>.txt",
                 f"{n['outside']}/{n['missing']}": "outside/<dangling target>",
                 f"{n['outside']}/{n['missing_dir']}": "outside/<dangling directory>"}
        return table.get(rel, "other")

    # -- targets -------------------------------------------------------------

    def target(self, kind: str, *, relative: bool, wants_dir: bool, destination: bool = False) -> str:
        """The path string sent for one case (``relative``: a project server's own terms)."""
        n = self.names
        f = n["outside"] if wants_dir else f"{n['outside']}/{n['secret']}"
        inside = n["sub"] if wants_dir else (n["destination"] if destination else n["inside"])
        sibling = n["sibling"] if wants_dir else f"{n['sibling']}/{n['secret']}"
        link = n["link_out_dir"] if wants_dir else n["link_out"]
        dangling = n["dangling_dir"] if wants_dir else n["dangling"]
        r = self.root
        table = {
            "inside": (f"{r}/{inside}", inside),
            "outside": (f, f),
            "prefix_sibling": (f"{self.base}/{sibling}", f"../{sibling}"),
            "traversal": (f"{r}/../{f}", f"../{f}"),
            "encoded": (f"{r}/%2e%2e/{f}", f"%2e%2e/{f}"),
            "absolute": (f"{self.base}/{f}", f"{self.base}/{f}"),
            "symlink_out": (f"{r}/{link}", link),
            "dangling": (f"{r}/{dangling}", dangling),
        }
        return table[kind][1 if relative else 0]

    def default(self, *, relative: bool, wants_dir: bool, destination: bool) -> str:
        """The inside value for a path slot that is not the one under test."""
        n = self.names
        name = n["sub"] if wants_dir else (n["destination"] if destination else n["inside"])
        return name if relative else f"{self.root}/{name}"


def _clear(dir_fd: int) -> None:
    """Remove everything below the directory ``dir_fd`` (bottom up, links removed, never followed)."""
    for _top, dirs, files, dfd in os.fwalk(".", dir_fd=dir_fd, topdown=False, follow_symlinks=False):
        for name in files:
            try:
                os.unlink(name, dir_fd=dfd)
            except FileNotFoundError:
                pass
        for name in dirs:
            try:
                os.rmdir(name, dir_fd=dfd)
            except NotADirectoryError:  # a link to a directory (fwalk lists it among dirs)
                os.unlink(name, dir_fd=dfd)
            except FileNotFoundError:
                pass
            except OSError:
                os.unlink(name, dir_fd=dfd)
