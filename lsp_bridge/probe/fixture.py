"""The probe's fixture: a narrow root and the ways out of it, in one temporary directory.

```
BASE/
  root/                    the narrow root the server is started with
    inside.txt             "probe inside ..."
    sub/nested.txt
    link_out     -> ../outside/secret.txt     symlink inside pointing out
    link_out_dir -> ../outside
    dangling     -> ../outside/created-through-link.txt   (does not exist)
    dangling_dir -> ../outside/missing-dir                (does not exist)
  root_evil/secret.txt     prefix sibling: "root_evil".startswith("root")
  outside/secret.txt       the marker secret
  outside/<token>.txt      a file whose *name* is a token: a listing that shows it leaked
```

Every outside file holds the content marker; the listing token appears only in
names. Neither appears in any target path, so an error message that echoes the
path is never mistaken for a leak. The probe never writes outside BASE.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field

KINDS = ("inside", "outside", "prefix_sibling", "traversal", "encoded", "absolute", "symlink_out", "dangling")
KIND_HELP = {
    "inside": "a file in the root (expected: permitted)",
    "outside": "relative to the server's working directory (the fixture's base), outside the root",
    "prefix_sibling": "root_evil/, whose name starts with the root's name",
    "traversal": "the root followed by '..'",
    "encoded": "the root followed by a percent-encoded '..' (%2e%2e)",
    "absolute": "an absolute path outside the root",
    "symlink_out": "a symlink inside the root pointing outside",
    "dangling": "a symlink inside the root whose target (outside) does not exist",
}


@dataclass
class Fixture:
    base: str
    marker: str = field(default_factory=lambda: "RGPROBE-" + secrets.token_hex(12))
    token: str = field(default_factory=lambda: "rgleak" + secrets.token_hex(8))
    initial: dict[str, str] = field(default_factory=dict)  # the snapshot after building

    @property
    def root(self) -> str:
        return os.path.join(self.base, "root")

    @classmethod
    def create(cls) -> Fixture:
        base = os.path.realpath(tempfile.mkdtemp(prefix="rootguard-probe-"))
        fixture = cls(base)
        fixture.build()
        fixture.initial = fixture.snapshot()
        return fixture

    def build(self) -> None:
        b = self.base
        for d in ("root/sub", "root_evil", "outside"):
            os.makedirs(os.path.join(b, d), exist_ok=True)
        self._write("root/inside.txt", "probe inside the root\n")
        self._write("root/sub/nested.txt", "probe nested inside the root\n")
        self._write("root_evil/secret.txt", f"probe {self.marker} (prefix sibling)\n")
        self._write("outside/secret.txt", f"probe {self.marker}\n")
        self._write(f"outside/{self.token}.txt", f"probe {self.marker}\n")
        for name, target in (("link_out", "../outside/secret.txt"), ("link_out_dir", "../outside"),
                             ("dangling", "../outside/created-through-link.txt"),
                             ("dangling_dir", "../outside/missing-dir")):
            os.symlink(target, os.path.join(b, "root", name))

    def _write(self, rel: str, text: str) -> None:
        with open(os.path.join(self.base, rel), "w", encoding="utf-8") as fh:
            fh.write(text)

    def snapshot(self) -> dict[str, str]:
        """Every entry under BASE: type and content hash or link text (not following links)."""
        seen: dict[str, str] = {}
        for top, dirs, files in os.walk(self.base, followlinks=False):
            for name in dirs + files:
                full = os.path.join(top, name)
                rel = os.path.relpath(full, self.base)
                if os.path.islink(full):
                    seen[rel] = "link:" + os.readlink(full)
                elif os.path.isdir(full):
                    seen[rel] = "dir"
                else:
                    try:
                        with open(full, "rb") as fh:
                            seen[rel] = "file:" + hashlib.sha256(fh.read()).hexdigest()
                    except OSError as err:
                        seen[rel] = f"unreadable:{err.errno}"
        return seen

    def changes_outside(self, now: dict[str, str]) -> list[str]:
        """Entries outside the root that were created, changed or removed since the start."""
        before = self.initial
        names = set(before) | set(now)
        return sorted(n for n in names if not _in_root(n) and before.get(n) != now.get(n))

    def marker_in_root(self) -> list[str]:
        """Files in the root (not links) that now hold outside content."""
        found = []
        for top, _dirs, files in os.walk(self.root, followlinks=False):
            for name in files:
                full = os.path.join(top, name)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                try:
                    with open(full, "rb") as fh:
                        if self.marker.encode() in fh.read(1 << 20):
                            found.append(os.path.relpath(full, self.base))
                except OSError:
                    continue
        return found

    def reset(self) -> None:
        """Back to the initial state when a call changed anything (the root directory itself stays)."""
        if self.snapshot() == self.initial:
            return
        for name in os.listdir(self.base):
            path = os.path.join(self.base, name)
            if name == "root":
                for inner in os.listdir(path):
                    _remove(os.path.join(path, inner))
            else:
                _remove(path)
        os.makedirs(self.root, exist_ok=True)
        self.build()

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- targets -------------------------------------------------------------

    def target(self, kind: str, *, relative: bool, wants_dir: bool, destination: bool = False) -> str:
        """The path string sent for one case (``relative``: a project server's own terms)."""
        f = "outside" if wants_dir else "outside/secret.txt"
        inside = "sub" if wants_dir else ("probe-destination.txt" if destination else "inside.txt")
        sibling = "root_evil" if wants_dir else "root_evil/secret.txt"
        link = "link_out_dir" if wants_dir else "link_out"
        dangling = "dangling_dir" if wants_dir else "dangling"
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
        name = "sub" if wants_dir else ("probe-destination.txt" if destination else "inside.txt")
        return name if relative else f"{self.root}/{name}"


def _in_root(rel: str) -> bool:
    return rel == "root" or rel.startswith("root" + os.sep)


def _remove(path: str) -> None:
    if os.path.islink(path) or not os.path.isdir(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    else:
        shutil.rmtree(path, ignore_errors=True)
