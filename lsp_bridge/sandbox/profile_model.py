"""A sandbox profile as data: the mount operations and what they leave out (``profile.build_profile`` makes one).

``Profile.bwrap_args()`` renders it for bubblewrap, ``Profile.shim_argv()`` for the Landlock shim,
``Profile.command_line()`` both as one argument list (what ``rootguard run --print`` shows).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lsp_bridge.core.paths import is_within
from lsp_bridge.sandbox.limits import SandboxSettings

SHIM_TARGET = "/run/rootguard/landlock-shim.py"
KINDS = ("ro-bind", "bind", "symlink", "proc", "dev", "tmpfs", "mask-file", "mask-dir", "skeleton")
# bubblewrap's namespaces and privileges, whoever starts it (root included): a user namespace with no
# capability and no nested one, private PIDs and System V IPC. ``--new-session`` is added when stdin is
# not a terminal (``Profile.bwrap_args``); the seccomp filter refuses TIOCSTI either way.
NAMESPACE_ARGS = ("--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-user", "--disable-userns",
                  "--cap-drop", "ALL")


class ProfileError(Exception):
    """The policy cannot be expressed as a sandbox: nothing runs (exit 125)."""


@dataclass(frozen=True)
class MountOp:
    """One step of the sandbox's file system, applied in order.

    ``kind``: ``ro-bind`` / ``bind`` (``source`` seen read-only / writable at
    ``target``), ``symlink`` (``target`` is a link whose text is ``source``),
    ``proc``, ``dev``, ``tmpfs`` (a private writable directory), ``mask-file``
    (``/dev/null`` over a file), ``mask-dir`` (an empty read-only tmpfs over a
    directory), ``skeleton`` (a read-only tmpfs holding the mount points of what is
    bound below it: the directories between a private tmpfs and a root inside it).
    ``size``: a ``tmpfs``'s size limit in bytes. ``reason`` says why, for ``--print``
    and the docs.
    """

    kind: str
    target: str
    source: str | None = None
    reason: str = ""
    size: int | None = None

    @property
    def mask(self) -> bool:
        return self.kind in ("mask-file", "mask-dir")

    @property
    def writable(self) -> bool:
        return self.kind in ("bind", "tmpfs")

    def bwrap_args(self) -> list[str]:
        if self.kind == "ro-bind":
            return ["--ro-bind", str(self.source), self.target]
        if self.kind == "bind":
            return ["--bind", str(self.source), self.target]
        if self.kind == "symlink":
            return ["--symlink", str(self.source), self.target]
        if self.kind == "proc":
            return ["--proc", self.target]
        if self.kind == "dev":
            return ["--dev", self.target]
        if self.kind == "tmpfs":
            return [*(["--size", str(self.size)] if self.size else []), "--tmpfs", self.target]
        if self.kind == "mask-file":
            return ["--ro-bind", "/dev/null", self.target]
        if self.kind == "mask-dir":  # made read-only after every mount (``Profile.bwrap_args``): an allowed
            return ["--perms", "0555", "--tmpfs", self.target]  # file below it is bound on a point made inside
        if self.kind == "skeleton":  # read-only after every mount, like a mask-dir
            return ["--perms", "0755", "--tmpfs", self.target]
        raise ValueError(f"unknown mount kind {self.kind!r}")

    def to_json(self) -> dict:
        return {"kind": self.kind, "target": self.target, "source": self.source, "reason": self.reason}


@dataclass(frozen=True)
class Hidden:
    """A path the policy does not let the command see, and how to grant it."""

    path: str
    decision: str  # "request" | "deny"
    reason: str
    grant: str | None = None  # request-level: the rule that would grant it

    def line(self) -> str:
        text = f"rootguard run: hidden (needs approval, which a sandbox cannot ask for): {self.path}"
        return text + (f"; to grant it: {self.grant}" if self.grant else "")

    def to_json(self) -> dict:
        return {"path": self.path, "decision": self.decision, "reason": self.reason, "grant": self.grant}


@dataclass(frozen=True)
class Unenforceable:
    """A path the policy restricts that the sandbox cannot cover (it does not exist)."""

    path: str
    reason: str

    def to_json(self) -> dict:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class Profile:
    """The sandbox for one session; see the module docstring."""

    ops: tuple[MountOp, ...]
    chdir: str
    hidden: tuple[Hidden, ...] = ()
    unenforceable: tuple[Unenforceable, ...] = ()
    landlock_ro: tuple[str, ...] = ()
    landlock_rw: tuple[str, ...] = ()
    interpreter: str | None = None  # Python for the Landlock shim inside; None: no shim
    shim_source: str | None = None
    notes: tuple[str, ...] = ()
    # Visible trees where a rule could hide a name made while the command runs (``watch_plan``).
    guarded: tuple[str, ...] = ()
    namespace_args: tuple[str, ...] = NAMESPACE_ARGS
    env: tuple[tuple[str, str], ...] = (("ROOTGUARD_SANDBOX", "1"),)
    home: str = "/tmp"  # HOME inside: a private tmpfs at the caller's home, or /tmp
    settings: SandboxSettings = SandboxSettings()  # [sandbox]: granted variables, limits (sandbox/limits.py)
    scope: bool = False  # Landlock scoping of abstract unix sockets and signals (ABI 6) in the shim
    # protected-named symbolic links in the writable trees at the start, with their inode: no mount can
    # cover a link, so the sweep after the command (sweep.py) lets each be while the same link holds the name
    links: tuple[tuple[str, int], ...] = ()

    # -- views ---------------------------------------------------------------

    @property
    def masks(self) -> tuple[MountOp, ...]:
        return tuple(op for op in self.ops if op.mask)

    @property
    def trees(self) -> tuple[MountOp, ...]:
        """Binds of host paths (not system directories, not masks)."""
        return tuple(
            op for op in self.ops
            if op.kind in ("bind", "ro-bind") and not op.reason.startswith("system") and op.target != SHIM_TARGET
        )

    def watched(self) -> tuple[MountOp, ...]:
        """Mounts over a path inside another visible tree: a host-side rename of that
        path detaches them (the sandbox would see the new file), so the runner watches them."""
        visible = [op.target for op in self.trees]
        return tuple(
            op for op in self.ops
            if (op.mask or op.kind in ("bind", "ro-bind")) and any(t != op.target and is_within(op.target, t) for t in visible)
        )

    def watch_plan(self) -> tuple[list[tuple[str, str]], list[str], list[str]]:
        """What the runner watches on the host (``watch.SandboxWatch``): each mask or nested mount with the
        visible tree it sits in, the visible directories (where a file the policy hides could appear) and
        the writable ones (where a name the policy does not let the command write could be created)."""
        trees = [op.target for op in self.trees]
        masks = []
        for op in self.watched():
            holders = [t for t in trees if t != op.target and is_within(op.target, t)]
            masks.append((op.target, max(holders, key=len)))
        visible = [t for t in self.guarded if os.path.isdir(t)]
        writable = [op.target for op in self.ops if op.kind == "bind" and os.path.isdir(op.target)]
        return masks, visible, writable

    def visible(self, path: str) -> bool:
        return any(is_within(path, op.target) for op in self.trees)

    # -- renderers -----------------------------------------------------------

    def bwrap_args(self, *, terminal: bool = False) -> list[str]:
        """bubblewrap options (no program name, no COMMAND), in order. ``terminal``: stdin is a
        terminal the command may control (job control): no ``--new-session``."""
        args: list[str] = []
        for op in self.ops:
            args += op.bwrap_args()
        for op in self.ops:
            if op.kind in ("mask-dir", "skeleton"):
                args += ["--remount-ro", op.target]
        for name, value in self.env:
            args += ["--setenv", name, value]
        args += ["--chdir", self.chdir, *self.namespace_args, *([] if terminal else ["--new-session"])]
        return args

    def shim_argv(self, command: Sequence[str], *, required: bool = False, inside: bool = True) -> list[str]:
        """The Landlock shim in front of COMMAND (``inside``: at its path in the sandbox)."""
        if self.interpreter is None or self.shim_source is None:
            return list(command)
        argv = [self.interpreter, "-I", "-S", SHIM_TARGET if inside else self.shim_source]
        for path in self.landlock_ro:
            argv += ["--ro", path]
        for path in self.landlock_rw:
            argv += ["--rw", path]
        if self.scope:
            argv.append("--scope")
        for name, value in self.settings.rlimits():
            argv += ["--rlimit", f"{name}={value}"]
        if required:
            argv.append("--required")
        return [*argv, "--", *command]

    def command_line(self, command: Sequence[str], bwrap: str = "bwrap") -> list[str]:
        """The whole sandbox command line, options inline (``rootguard run --print``)."""
        return [bwrap, *self.bwrap_args(), "--", *self.shim_argv(command)]

    def to_json(self) -> dict:
        return {
            "ops": [op.to_json() for op in self.ops],
            "chdir": self.chdir,
            "hidden": [h.to_json() for h in self.hidden],
            "unenforceable": [u.to_json() for u in self.unenforceable],
            "landlock": {"ro": list(self.landlock_ro), "rw": list(self.landlock_rw)},
            "notes": list(self.notes),
        }


def union_paths(profile: Profile) -> Iterable[str]:
    """The host paths the profile makes visible (trees and single files)."""
    return [op.target for op in profile.trees]
