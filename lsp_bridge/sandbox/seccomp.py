"""The seccomp filter ``rootguard run`` hands bubblewrap (``--seccomp FD``).

A classic BPF program (``struct sock_filter`` records packed with ``struct``, no
library) that refuses, with ``EPERM``, the system calls a sandboxed command has no
business making and that reach past the mount namespace:

* ``ioctl`` ``TIOCSTI`` and ``TIOCLINUX``: typing into, or reading from, the
  terminal the sandbox shares with its caller (what ``--new-session`` used to stop;
  an interactive shell keeps job control without it);
* ``open_by_handle_at`` / ``name_to_handle_at``: opening a file by its handle, past
  every mount and mask (needs ``CAP_DAC_READ_SEARCH``, which root has);
* ``socket(AF_PACKET, ...)``: raw link-layer sockets (sniffing the host's traffic);
* loading and removing kernel modules, ``kexec``, keyrings (``keyctl``,
  ``add_key``, ``request_key``: the caller's session keyring), ``bpf``,
  ``perf_event_open``, ``userfaultfd``, ``swapon``/``swapoff``, ``acct``, ``reboot``.

The program first checks the architecture the call was made with: any other than the
one the filter was built for (a 32-bit ``int 0x80`` call on x86-64, say) kills the
process, and on x86-64 the x32 numbers (bit 30) are refused. ``program()`` refuses to
build for an architecture it has no table for (``SeccompError``): the runner then
does not run COMMAND (fail closed).
"""

from __future__ import annotations

import errno
import platform
import struct

# BPF opcodes (linux/bpf_common.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
# seccomp return values (linux/seccomp.h)
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
# struct seccomp_data offsets: nr, arch, instruction_pointer, args[6] (little-endian low words)
_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index


TIOCSTI = 0x5412
TIOCLINUX = 0x541C
AF_PACKET = 17
X32_SYSCALL_BIT = 0x40000000

DENIED = ("open_by_handle_at", "name_to_handle_at", "init_module", "finit_module", "delete_module", "kexec_load",
          "kexec_file_load", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
          "swapon", "swapoff", "acct", "reboot")

# (AUDIT_ARCH_*, syscall numbers) per machine; ioctl and socket are filtered on their arguments.
_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "ioctl": 16, "socket": 41, "open_by_handle_at": 304, "name_to_handle_at": 303, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "keyctl": 250,
        "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "swapon": 167, "swapoff": 168, "acct": 163, "reboot": 169,
    }),
    "aarch64": (0xC00000B7, {
        "ioctl": 29, "socket": 198, "open_by_handle_at": 265, "name_to_handle_at": 264, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "keyctl": 219,
        "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "swapon": 224, "swapoff": 225, "acct": 89, "reboot": 142,
    }),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


class SeccompError(Exception):
    """No filter can be built for this machine: COMMAND must not run."""


def machine() -> str:
    name = platform.machine().lower()
    return _ALIASES.get(name, name)


def describe() -> str:
    """One line for ``--print`` and the docs."""
    return ("seccomp: EPERM for ioctl TIOCSTI/TIOCLINUX, socket(AF_PACKET), " + ", ".join(DENIED)
            + f"; any other architecture than {machine()} is killed")


def program(arch: str | None = None) -> bytes:
    """The filter for ``arch`` (default: this machine), as the bytes bubblewrap reads from ``--seccomp FD``."""
    arch = _ALIASES.get(arch, arch) if arch else machine()
    if arch not in _TABLES:
        raise SeccompError(f"no seccomp filter for the {arch!r} architecture (known: {', '.join(sorted(_TABLES))}); "
                           "COMMAND was not run")
    audit, numbers = _TABLES[arch]
    code: list[tuple[int, object, object, int]] = []  # (opcode, jump-if-true label, jump-if-false label, k)

    def emit(op: int, k: int, jt: object = 0, jf: object = 0) -> None:
        code.append((op, jt, jf, k))

    emit(_LD_W_ABS, _ARCH)
    emit(_JEQ_K, audit, jt=1, jf=0)
    emit(_RET_K, RET_KILL_PROCESS)
    emit(_LD_W_ABS, _NR)
    if arch == "x86_64":
        emit(_JGE_K, X32_SYSCALL_BIT, jt="deny")
    for name in DENIED:
        emit(_JEQ_K, numbers[name], jt="deny")
    emit(_JEQ_K, numbers["ioctl"], jt="ioctl")
    emit(_JEQ_K, numbers["socket"], jt="socket")
    emit(_RET_K, RET_ALLOW)
    labels = {"ioctl": len(code)}
    emit(_LD_W_ABS, _arg(1))  # the request number is an unsigned int: the low word is what the kernel reads
    emit(_JEQ_K, TIOCSTI, jt="deny")
    emit(_JEQ_K, TIOCLINUX, jt="deny")
    emit(_RET_K, RET_ALLOW)
    labels["socket"] = len(code)
    emit(_LD_W_ABS, _arg(0))
    emit(_JEQ_K, AF_PACKET, jt="deny")
    emit(_RET_K, RET_ALLOW)
    labels["deny"] = len(code)
    emit(_RET_K, RET_ERRNO | errno.EPERM)
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(code):
        offsets = [labels[j] - index - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(isinstance(o, int) and 0 <= o <= 255 for o in offsets):
            raise SeccompError("seccomp filter: a jump out of range")  # pragma: no cover - fixed program
        out += struct.pack("=HBBI", op, offsets[0], offsets[1], k)
    return bytes(out)


__all__ = ["DENIED", "SeccompError", "describe", "machine", "program"]
