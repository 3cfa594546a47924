"""The Landlock exec shim: restrict this process, then exec COMMAND.

Run inside the bubblewrap sandbox (after the mounts are in place: a landlocked
process may no longer change its mount topology) as a standalone script with
the system interpreter, so it imports nothing but the standard library::

    python3 -I -S shim.py [--ro PATH]... [--rw PATH]... [--scope] [--rlimit NAME=N]... [--required] -- COMMAND [ARG...]

``--ro`` paths get read and execute, ``--rw`` paths everything a file system
allows. ``--scope`` adds Landlock's scoping where the ABI has it (6 and later):
no connecting to an abstract unix socket, and no signal, outside the sandbox.
``--rlimit data=N`` / ``nproc=N`` sets that resource limit (soft and hard) before
the exec, after the sandbox's user namespace exists (a process count is then the
sandbox's, not the caller's whole session). Landlock is allow-only: what is not listed is refused by the kernel
(EACCES). When the kernel has no Landlock, the shim execs COMMAND unchanged
unless ``--required`` says Landlock is the only layer (the degraded mode):
then it exits 125. Any other failure to apply the rules exits 125 with a
one-line reason; COMMAND never runs less confined than asked.

``abi()`` and ``restrict(ro, rw)`` are also imported by the host side
(``lsp_bridge.sandbox.landlock``) for detection.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys

SYS_CREATE_RULESET = 444  # the same number on every Linux architecture (generic table)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# LANDLOCK_ACCESS_FS_* bits
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6
SCOPE_ABI = 6
RLIMITS = ("data", "nproc")

FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # rights a rule on a file may carry
READ = EXECUTE | READ_FILE | READ_DIR


def handled(abi_version: int) -> int:
    """Every file-system right the kernel's Landlock ABI knows."""
    rights = (1 << 13) - 1
    if abi_version >= 2:
        rights |= REFER
    if abi_version >= 3:
        rights |= TRUNCATE
    if abi_version >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    libc = _syscall()
    version = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return int(version) if version > 0 else 0


class LandlockError(OSError):
    pass


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"{what}: {os.strerror(err)}")
    return result


def restrict(ro: list[str], rw: list[str], abi_version: int | None = None, *, scope: bool = False) -> int:
    """Restrict this process (and what it execs) to ``ro`` and ``rw``; the ABI used.

    ``scope``: also scope abstract unix sockets and signals to the domain (ABI 6 and
    later; ignored below). Missing paths are skipped (nothing there to allow). Raises
    ``LandlockError``.
    """
    version = abi() if abi_version is None else abi_version
    if version <= 0:
        raise LandlockError(errno.ENOSYS, "Landlock is not available in this kernel")
    libc = _syscall()
    rights = handled(version)
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scope and version >= SCOPE_ABI else 0
    attr = _RulesetAttr(rights, 0, scoped)
    size = ctypes.sizeof(attr) if scoped else ctypes.sizeof(ctypes.c_uint64)  # older ABIs: the first field only
    ruleset = _check(libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                                  ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for paths, allowed in ((ro, READ & rights), (rw, rights)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                try:
                    access = allowed
                    if not stat.S_ISDIR(os.fstat(fd).st_mode):
                        access &= FILE_ONLY
                    beneath = _PathBeneathAttr(access, fd)
                    _check(libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                                        ctypes.byref(beneath), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
                finally:
                    os.close(fd)
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return version


class _Options:
    def __init__(self) -> None:
        self.ro: list[str] = []
        self.rw: list[str] = []
        self.required = False
        self.scope = False
        self.rlimits: list[tuple[str, int]] = []
        self.command: list[str] = []


def _parse(argv: list[str]) -> _Options:
    options = _Options()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            options.command = argv[i + 1:]
            return options
        if arg in ("--ro", "--rw") and i + 1 < len(argv):
            (options.ro if arg == "--ro" else options.rw).append(argv[i + 1])
            i += 2
            continue
        if arg == "--rlimit" and i + 1 < len(argv):
            name, _, value = argv[i + 1].partition("=")
            if name not in RLIMITS or not value.isdigit():
                raise ValueError(f"bad --rlimit {argv[i + 1]!r} (NAME=N, NAME one of {', '.join(RLIMITS)})")
            options.rlimits.append((name, int(value)))
            i += 2
            continue
        if arg in ("--required", "--scope"):
            setattr(options, arg[2:], True)
            i += 1
            continue
        raise ValueError(f"unexpected shim argument {arg!r}")
    raise ValueError("no COMMAND after --")


def set_limits(limits: list[tuple[str, int]]) -> None:
    """Lower each named resource limit, soft and hard (never raise one)."""
    import resource

    for name, value in limits:
        which = {"data": resource.RLIMIT_DATA, "nproc": resource.RLIMIT_NPROC}[name]
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def main(argv: list[str]) -> int:
    try:
        options = _parse(argv)
    except ValueError as err:
        print(f"rootguard run: landlock shim: {err}", file=sys.stderr)
        return 125
    ro, rw, required, command = options.ro, options.rw, options.required, options.command
    try:
        set_limits(options.rlimits)
    except (OSError, ValueError) as err:
        print(f"rootguard run: cannot set the resource limits ({err}); COMMAND was not run", file=sys.stderr)
        return 125
    if not command:
        print("rootguard run: landlock shim: no COMMAND", file=sys.stderr)
        return 125
    version = abi()
    if version > 0:
        try:
            restrict(ro, rw, version, scope=options.scope)
        except (OSError, ValueError) as err:
            print(f"rootguard run: cannot apply the Landlock layer ({err}); COMMAND was not run", file=sys.stderr)
            return 125
    elif required:
        print("rootguard run: Landlock is not available in this kernel and it is the only layer; COMMAND was not run",
              file=sys.stderr)
        return 125
    try:
        os.execvp(command[0], command)
    except OSError as err:
        print(f"rootguard run: {command[0]}: {err.strerror}", file=sys.stderr)
        return 127 if err.errno == errno.ENOENT else 126
    return 125  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
