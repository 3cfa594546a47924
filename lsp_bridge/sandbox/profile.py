"""A session's effective policy as a sandbox profile: the mount operations.

``build_profile(session) -> Profile`` asks the one policy engine
(``lsp_bridge.core.policy``) about the union entries, the rule anchors, the
paths the rules' globs match, the protected names and the toolchain mounts of
the reconciliation, and turns the answers into an ordered list of ``MountOp``:

* system directories read-only (``/usr``, ``/etc``... ; merged-``/usr`` links
  as links), ``/proc``, a minimal ``/dev``, a private ``/tmp``; the shadow
  password files masked;
* each union entry at its own path, writable only where ``write`` is allowed;
* rules and the pnpm store outside the union as ``ro-bind`` (``bind`` where the
  rule allows writing), a single-file grant as a single-file bind;
* denied and request-level files (``/dev/null``) and directories (a read-only
  tmpfs) inside a visible tree masked; a path that does not exist cannot be
  masked without creating a host file, so the runner watches for it
  (``watch.SandboxWatch``) and stops the sandbox when it appears;
* ``.git`` and the protected targets (configuration files, editor and shell
  auto-run files) read-only inside writable trees;
* the Landlock allow-list the exec shim applies inside (``landlock_ro``,
  ``landlock_rw``).

Nothing is mounted over the host file system and nothing runs here: the
profile is data (its records are ``profile_model``). ``Profile.bwrap_args()`` renders it for bubblewrap,
``Profile.shim_argv()`` for the Landlock shim, ``Profile.command_line()`` both
as one argument list (what ``rootguard run --print`` shows). The runner
(``lsp_bridge.sandbox.runner``) and ``rootguard trace`` consume it.

The one I/O here is reading the host tree: existence, file types, and a
bounded walk of writable trees (protected names) and of trees a glob rule
covers (``MAX_WALK`` entries; beyond that the profile fails closed).
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from collections.abc import Callable, Sequence

from lsp_bridge.core.paths import canonical, depth, is_within, relative_to
from lsp_bridge.core.policy import Decision, Target, inspect
from lsp_bridge.core.protected import (
    PROTECTED_CHILDREN,
    PROTECTED_NAMES,
    PROTECTED_SUFFIXES,
    protected_reason,
    user_level_paths,
)
from lsp_bridge.sandbox.environment import sandbox_dirs
from lsp_bridge.sandbox.git_env import WRAPPER_SOURCE, WRAPPER_TARGET, git_env
from lsp_bridge.sandbox.limits import settings_of
from lsp_bridge.sandbox.profile_model import (
    KINDS,
    NAMESPACE_ARGS,
    SHIM_TARGET,
    Hidden,
    MountOp,
    Profile,
    ProfileError,
    Unenforceable,
    union_paths,
)
from lsp_bridge.sandbox.shim import SCOPE_ABI
from lsp_bridge.sandbox.shim import abi as landlock_abi

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SYSTEM_MASKS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh/ssh_host_*_key")
MAX_WALK = 400_000

# ---------------------------------------------------------------------------
# building


def build_profile(
    session,
    *,
    cwd: str | None = None,
    toolchain: bool = True,
    landlock: bool = True,
) -> Profile:
    """The sandbox profile of ``session`` (a ``lsp_bridge.core.session.Session``).

    ``cwd``: where COMMAND starts when it is visible (else the first visible
    tree, else ``/``); never a source of roots. ``toolchain``: mount what the
    toolchain reads outside the roots (the pnpm store the links name, single
    configuration files above the root) where the engine allows it: they are
    rules of source ``toolchain`` (``core.toolchain``), found here unless the
    session already has them (``inventory.mounts.enable_toolchain``); a user or
    project rule that denies or asks for one decides it, and the profile says so.
    ``landlock``: put the Landlock exec shim in front of COMMAND.
    Raises ``ProfileError`` when the policy cannot be expressed.
    """
    if toolchain and session.toolchain() is None:
        from lsp_bridge.inventory.mounts import enable_toolchain

        enable_toolchain(session)
    return _Builder(session, cwd, toolchain, landlock).build()


class _Builder:
    def __init__(self, session, cwd, toolchain, landlock):
        if session.policy is None or session.scope is None:
            raise ProfileError("the session has no policy")
        self.session = session
        self.policy = session.policy
        self.cwd = cwd
        self.toolchain = toolchain
        state = session.toolchain() if toolchain else None
        self.tool_mounts = {m.path: m for m in state[0]} if state else {}
        self.landlock = landlock
        self.system: list[MountOp] = []
        self.ops: list[MountOp] = []
        self.state: dict[str, str] = {}  # target -> "rw" | "ro" | "masked"
        self.hidden: list[Hidden] = []
        self.unenforceable: list[Unenforceable] = []
        self.notes: list[str] = []
        self.dark: list[str] = []  # union entries the command may not read (walked for what it may)
        self.links: list[tuple[str, int]] = []  # protected-named symbolic links in the writable trees, inode
        self.user_file = _user_file(session)
        self.settings = settings_of(session)

    # -- decisions ------------------------------------------------------------

    def decide(self, op: str, path: str) -> Decision:
        inode, nlink = inspect(path)
        return self.policy.decide_target(op, Target(path, inode=inode, nlink=nlink))

    def grant_hint(self, path: str) -> str:
        if any(is_within(path, c) for c in self.session.scope.request_checkouts()):
            return (f'set [workspace] worktrees = "include" in {self.user_file} (a sibling worktree under '
                    'worktrees = "request" always needs approval)')
        return (f'add to {self.user_file}: [[paths]] id = "grant-{os.path.basename(path) or "root"}", '
                f'path = "{path}", policies = {{ read = "allow" }} (or open it as a workspace folder)')

    def hide(self, path: str, decision: Decision) -> None:
        if any(h.path == path for h in self.hidden):
            return
        grant = self.grant_hint(path) if decision.decision == "request" else None
        self.hidden.append(Hidden(path, decision.decision, decision.reason, grant))

    # -- state ------------------------------------------------------------------

    def add(self, op: MountOp, state: str) -> None:
        self.ops.append(op)
        self.state[op.target] = state

    def state_at(self, path: str) -> str | None:
        """The mode a path has so far: the nearest mount at or above it."""
        probe = path
        while True:
            found = self.state.get(probe)
            if found is not None:
                return found
            parent = os.path.dirname(probe)
            if parent == probe:
                return None
            probe = parent

    # -- steps --------------------------------------------------------------------

    def build(self) -> Profile:
        self.add_system()
        self.add_trees()
        self.add_rule_anchors()
        if self.toolchain:
            self.toolchain_notes()
        self.add_candidates()
        from lsp_bridge.sandbox.home import private_areas

        home = private_areas(self)
        interpreter, shim = self.shim() if self.landlock else (None, None)
        ops = sorted(self.ops, key=lambda op: depth(op.target))
        ro, rw = _landlock_lists(self.system, ops)
        # Parents before children (a stable sort: the system part first at equal depth), so a
        # union entry at / or /tmp (version 1 meanings) goes under /proc, /dev and the masks.
        ordered = sorted(self.system + ops, key=lambda op: depth(op.target))
        chdir = self.chdir()
        trees = [op.target for op in ops if op.kind in ("bind", "ro-bind")]
        seen = lambda p: self.state_at(p) in ("rw", "ro") or any(is_within(p, d) for d in SYSTEM_DIRS)  # noqa: E731
        git, wrapper = git_env(self.session.scope.git, chdir, seen, trees, self.user_file, os.environ.get("PATH"))
        if wrapper:  # a system part: not a tree of the policy's (nothing the command may write or hides)
            ordered.append(MountOp("ro-bind", WRAPPER_TARGET, WRAPPER_SOURCE, "system: git's private index ([workspace] git)"))
            ro = (*ro, WRAPPER_TARGET)
        return Profile(
            ops=tuple(ordered),
            chdir=chdir,
            hidden=tuple(self.hidden),
            unenforceable=tuple(self.unenforceable),
            landlock_ro=ro,
            landlock_rw=rw,
            interpreter=interpreter,
            shim_source=shim,
            notes=tuple(self.notes),
            guarded=_guarded(self.policy, self.session, self.ops),
            home=home,
            # [workspace] git: how git finds the repository, or why it may not
            env=(("ROOTGUARD_SANDBOX", "1"), *sandbox_dirs(home).items(), *git),
            settings=self.settings,
            scope=self.landlock and landlock_abi() >= SCOPE_ABI,
            links=tuple(self.links),
        )

    def add_system(self) -> None:
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                self.system.append(MountOp("symlink", d, os.readlink(d), "system directory (a link)"))
            elif os.path.isdir(d):
                self.system.append(MountOp("ro-bind", d, d, "system directory, read-only"))
        self.system += [
            MountOp("proc", "/proc", reason="system: a private /proc (this PID namespace only)"),
            MountOp("dev", "/dev", reason="system: a minimal /dev (null, zero, random, tty...)"),
            MountOp("tmpfs", "/tmp", reason="system: a private /tmp, gone when the command ends",
                    size=self.settings.tmp_size or None),
        ]
        for pattern in SYSTEM_MASKS:
            for path in sorted(glob.glob(pattern)):
                if os.path.isfile(path) and not os.path.islink(path):
                    self.system.append(MountOp("mask-file", path, reason="system: password hashes and host keys"))

    def add_trees(self) -> None:
        """Each union entry at its own path, as the engine decides the entry itself; one it may
        not read stays out, and ``add_candidates`` still brings in what it may read below it."""
        scope = self.session.scope
        for entry in scope.union.entries:
            read = self.decide("read", entry.path)
            if read.decision != "allow":
                self.hide(entry.path, read)
                self.dark.append(entry.path)
                continue
            write = self.decide("write", entry.path)
            if write.decision == "allow":
                self.add(MountOp("bind", entry.path, entry.path, f"union entry ({entry.reason}), writable"), "rw")
            else:
                self.add(MountOp("ro-bind", entry.path, entry.path,
                                 f"union entry ({entry.reason}), read-only: {write.reason}"), "ro")
        for area in scope.approval_only.entries:
            self.hide(area.path, self.decide("read", area.path))

    def add_rule_anchors(self) -> None:
        """Rule anchors outside every visible tree that the policy lets the command read.

        An anchor above a tree (a rule allowing the whole repository to be read) is
        mounted too; the tree goes on top of it (mounts are applied parents first).
        An anchor the command may not read itself (a rule whose ``includes`` select
        files below it) is walked by ``add_candidates`` for the entries it may read."""
        for ruleset in self.policy.rulesets():
            for compiled in ruleset.compiled:
                anchor = compiled.anchor
                tool = compiled.rule.source == "toolchain"
                if tool and not self.toolchain:
                    continue  # --no-toolchain
                if self.state_at(anchor) is not None or anchor in self.state or not os.path.lexists(anchor):
                    continue  # inside a tree: handled with the tree's candidates
                try:
                    real = canonical(anchor)
                except ValueError:
                    continue
                read = self.decide("read", real)
                if read.decision == "request":
                    self.hide(real, read)
                if read.decision != "allow":
                    if tool and read.decision == "deny":  # a request-level one is said as hidden
                        self.notes.append(f"toolchain mount {real} left out: the engine says {read.decision} "
                                          f"({read.reason})")
                    elif not tool and os.path.isdir(real) and real not in self.dark:
                        self.dark.append(real)  # its globs may still allow entries below it
                    continue
                write = self.decide("write", real)
                rule = compiled.rule
                what = "single-file grant" if not os.path.isdir(real) else "rule"
                if tool:
                    mount = self.tool_mounts.get(real)
                    why = f"toolchain ({mount.kind}): {mount.reason}" if mount else f"toolchain rule {rule.id!r}"
                    self.add(MountOp("ro-bind", real, real, f"{why}; {read.reason}"), "ro")
                elif write.decision == "allow":
                    self.add(MountOp("bind", real, real, f"{what} {rule.id!r} ({rule.source}), writable"), "rw")
                else:
                    self.add(MountOp("ro-bind", real, real, f"{what} {rule.id!r} ({rule.source}), read-only"), "ro")

    def toolchain_notes(self) -> None:
        """What the toolchain asked for that is held or refused: said, never mounted."""
        state = self.session.toolchain()
        if not state:
            return
        _, held, refused = state
        for mount in held:
            self.notes.append(f"toolchain mount {mount.path} held: new since the last approved session and asked "
                              f"for by {mount.cause}, which the agent can write (rootguard config approve)")
        for refusal in refused:
            asked = f" (asked for by {refusal.cause})" if refusal.cause else ""
            self.notes.append(f"toolchain path {refusal.path} refused{asked}: {refusal.reason}")

    def add_candidates(self) -> None:
        """Masks and nested binds wherever the engine's answer can differ from its directory's.

        The answer for an entry can differ from its parent's only where something names it: a
        rule's anchor, a glob (an include or an exclude) of a rule above it, a protected name, a
        union entry, an approval area or a sibling checkout, an active configuration file, or a
        second hard link. Each such entry is decided by the engine and mounted, masked or left
        to inherit its parent accordingly (``apply``); everything else inherits.
        """
        candidates: dict[str, str] = {}  # path -> why it is a candidate ("rule" | "protected")
        compiled = [c for ruleset in self.policy.rulesets() for c in ruleset.compiled]
        globbed = [c for c in compiled if c.includes or c.excludes]
        anchors = {c.anchor for c in compiled}
        scope = self.session.scope
        anchors.update(e.path for e in scope.union.entries)
        anchors.update(e.path for e in scope.approval_only.entries)
        anchors.update(scope.request_checkouts())
        hard = any(c.rule.read == "deny" for c in compiled)  # a second name of a denied file may sit anywhere
        trees = [op.target for op in self.ops if op.kind in ("bind", "ro-bind")]
        for tree in trees:
            writable = self.state_at(tree) == "rw"
            rules = [c for c in globbed if is_within(tree, c.anchor) or is_within(c.anchor, tree)]
            inner = any(a != tree and is_within(a, tree) for a in anchors)
            if writable or rules or inner or hard:
                self.walk(tree, writable, rules, anchors, hard, candidates)
        # A tree the command may not read: a union entry is walked like any (an exclude may give an
        # entry back to the baseline); a rule's anchor only for what a rule allowing reads names in it.
        opening = [c for c in compiled if c.rule.read == "allow" and not c.reduced]
        entries = {e.path for e in scope.union.entries}
        for tree in self.dark:
            candidates_rules = globbed if tree in entries else [c for c in opening if c.includes or c.excludes]
            named = anchors if tree in entries else {c.anchor for c in opening}
            rules = [c for c in candidates_rules if is_within(tree, c.anchor) or is_within(c.anchor, tree)]
            below = {a for a in named if a != tree and is_within(a, tree)}
            if rules or below:
                self.walk(tree, False, rules, below, False, candidates)
        trees += self.dark
        for path in anchors:
            if path not in self.state and any(is_within(path, t) for t in trees):
                candidates.setdefault(path, "rule")
        areas = self.policy.areas
        for own in (areas.state_dir, areas.cache_dir):  # Root Guard's own directories, made so they can be bound
            if own and self.state_at(own) == "rw" and not os.path.lexists(own):  # read-only (else creatable inside)
                with contextlib.suppress(OSError):
                    os.makedirs(own, 0o700, exist_ok=True)
        machine = [areas.user_config_dir, areas.user_file, areas.state_dir, areas.cache_dir, *areas.admin_dirs,
                   areas.runtime_dir, *areas.agent_homes, *user_level_paths(areas)]
        for path in [*self.session.config_files(), *(p for p in machine if p)]:
            if self.state_at(path) == "rw":
                candidates.setdefault(path, "protected")
        for path in sorted(candidates, key=depth):
            self.apply(path, candidates[path] == "protected")

    def walk(self, tree: str, writable: bool, rules, anchors: set[str], hard: bool, candidates: dict[str, str]) -> None:
        budget = MAX_WALK
        stack = [tree]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue
            budget -= len(entries)
            children = PROTECTED_CHILDREN.get(os.path.basename(directory), frozenset())
            if budget < 0:
                raise ProfileError(
                    f"more than {MAX_WALK} entries under {tree}: the rules' globs and protected names "
                    "cannot be expanded; give a narrower root"
                )
            for entry in entries:
                path = entry.path
                name = entry.name
                if entry.is_symlink():  # a link is judged where its target lies, which is mounted or not
                    if writable and _protected_name(name, children) and protected_reason(path, self.policy.areas):
                        self.links.append((path, entry.inode()))  # no mount covers it: the sweep lets it be
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                protected = _protected_name(name, children)
                if writable and protected and protected_reason(path, self.policy.areas) is not None:
                    if not self.git_writable(path):
                        candidates[path] = "protected"
                        continue  # read-only as a whole: nothing below needs looking at
                    candidates.setdefault(path, "rule")  # git = "write": its code paths are named by git-code
                named = path in anchors or any(_names(c, path) for c in rules)
                if named or (hard and not is_dir and _several_links(entry)):
                    candidates.setdefault(path, "rule")
                if is_dir and not (name == ".pnpm" and os.path.basename(directory) == "node_modules"):
                    stack.append(path)

    def apply(self, path: str, protected: bool) -> None:
        """Mount, mask or leave ``path`` so that the sandbox shows it as the engine decides."""
        here = self.state_at(path)
        if not os.path.lexists(path):
            if here not in ("rw", "ro"):
                return  # hidden or not mounted: nothing to create it in
            return  # creating it is watched: the runner stops the sandbox (``watch.SandboxWatch``)
        read = self.decide("read", path)
        if os.path.islink(path):
            if read.decision != "allow" and here in ("rw", "ro"):  # a bind mount follows the link
                self.unenforceable.append(Unenforceable(path, f"{read.decision} ({read.reason}), but it is a symbolic "
                                                              "link: a mount cannot cover a link, only its target"))
            return
        is_dir = os.path.isdir(path)
        if read.decision != "allow":
            if read.decision == "request":
                self.hide(path, read)
            if here in ("rw", "ro"):
                kind = "mask-dir" if is_dir else "mask-file"
                self.add(MountOp(kind, path, reason=f"{read.decision}: {read.reason}"), "masked")
            elif here is None and is_dir:
                self.state[path] = "masked"  # not mounted: stays out (its allowed entries are bound inside)
            return
        write = self.decide("write", path)
        want = "rw" if write.decision == "allow" and (not protected or write.rule_source == "git") else "ro"
        if want == here:
            return
        if want == "ro":
            why = "protected target, read-only" if protected else f"read-only: {write.reason}"
            self.add(MountOp("ro-bind", path, path, why), "ro")
        else:
            self.add(MountOp("bind", path, path, f"writable: {write.reason}"), "rw")

    def git_writable(self, path: str) -> bool:
        """A ``.git`` the engine lets the command write: ``[workspace] git = "write"`` (core/git_access.py)."""
        write = self.decide("write", path)
        return write.decision == "allow" and write.rule_source == "git"

    def chdir(self) -> str:
        if self.cwd:
            try:
                cwd = canonical(self.cwd)
            except ValueError:
                cwd = None
            if cwd and self.state_at(cwd) in ("rw", "ro"):
                return cwd
        for op in self.ops:
            if op.kind in ("bind", "ro-bind") and os.path.isdir(op.target):
                return op.target
        return "/"

    def shim(self) -> tuple[str | None, str | None]:
        from lsp_bridge.sandbox import landlock

        if landlock.abi() <= 0:
            self.notes.append("Landlock is not available in this kernel: bubblewrap is the only layer")
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim.py")
        interpreter = _system_python()
        if interpreter is None:
            prefix = canonical(sys.base_prefix)
            interpreter = canonical(sys.executable)
            self.add(MountOp("ro-bind", prefix, prefix, "the Python runtime of the Landlock shim, read-only"), "ro")
        self.ops.append(MountOp("ro-bind", SHIM_TARGET, source, "the Landlock exec shim, read-only"))
        return interpreter, source



def watch_judges(session) -> tuple[Callable[[str], tuple[str, bool] | None], Callable[[str], str | None]]:
    """For the runner's watch, the one engine's answers about a path just made: why it may not be
    written (and whether it is a protected target, which the runner sets aside), and why it may not
    be read; None: it may."""
    policy = session.policy

    def decided(op: str, path: str) -> Decision:
        inode, nlink = inspect(path)
        return policy.decide_target(op, Target(path, inode=inode, nlink=nlink))

    def refuses(path: str) -> tuple[str, bool] | None:
        decision = decided("write", path)
        if decision.decision == "allow":
            return None
        return f"{decision.decision}: {decision.reason}", protected_reason(path, policy.areas) is not None

    def hides(path: str) -> str | None:
        decision = decided("read", path)
        return None if decision.decision == "allow" else f"{decision.decision}: {decision.reason}"

    return refuses, hides


def _user_file(session) -> str:
    """The user configuration file a grant hint names (the one in force, else where it would be)."""
    for _, config in session.configs():
        if config.user_file:
            return config.user_file
    from lsp_bridge.core.config import user_config_path

    return user_config_path(session.env)


def _landlock_lists(system: Sequence[MountOp], ops: Sequence[MountOp]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the Landlock shim allows inside: the system mounts, /proc, /dev, /tmp and every bind."""
    ro: list[str] = [op.target for op in system if op.kind == "ro-bind"] + ["/proc"]
    rw: list[str] = ["/dev", "/tmp", *(op.target for op in system if op.kind == "tmpfs")]
    for op in ops:
        if op.kind == "bind":
            rw.append(op.target)
        elif op.kind == "ro-bind":
            ro.append(op.target)
    return tuple(dict.fromkeys(ro)), tuple(dict.fromkeys(rw))


def _guarded(policy, session, ops: Sequence[MountOp]) -> tuple[str, ...]:
    """The visible trees (union entries, rules' anchors) where a rule that hides or asks could name
    a file made while the command runs: the runner watches them for one."""
    hiding = [c.anchor for ruleset in policy.rulesets() for c in ruleset.compiled
              if c.verdict("read") in ("deny", "request")]
    scope = session.scope
    hiding += [e.path for e in scope.approval_only.entries] + list(scope.request_checkouts())
    hiding += [p for p in policy.areas.admin_dirs]
    trees = [op.target for op in ops if op.kind in ("bind", "ro-bind") and op.reason.startswith(
        ("union entry", "rule", "single-file grant"))]
    return tuple(t for t in trees if any(is_within(a, t) or is_within(t, a) for a in hiding))


def _protected_name(name: str, children: frozenset[str]) -> bool:
    """A name the walk stops at as a protected target candidate (``protected_reason`` confirms it)."""
    return name in PROTECTED_NAMES or name in children or name.endswith(PROTECTED_SUFFIXES)


def _names(compiled, path: str) -> bool:
    """Whether an include or an exclude of ``compiled`` names ``path`` (which may change its answer)."""
    if not is_within(path, compiled.anchor):
        return False
    rel = relative_to(path, compiled.anchor)
    return bool(rel) and ((compiled.includes and compiled.includes.matches(rel))
                          or (compiled.excludes and compiled.excludes.matches(rel)))


def _several_links(entry: os.DirEntry) -> bool:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return info.st_nlink > 1


def _system_python() -> str | None:
    """A Python 3 inside the read-only system directories, for the shim."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            real = canonical(candidate)
        except ValueError:
            continue
        if os.access(real, os.X_OK) and any(is_within(real, d) for d in ("/usr",)):
            return candidate
    return None


__all__ = [  # the profile's records live in profile_model.py; callers may import them from here
    "KINDS",
    "MAX_WALK",
    "NAMESPACE_ARGS",
    "PROTECTED_NAMES",
    "SHIM_TARGET",
    "SYSTEM_DIRS",
    "Hidden",
    "MountOp",
    "Profile",
    "ProfileError",
    "Unenforceable",
    "build_profile",
    "union_paths",
    "watch_judges",
]
