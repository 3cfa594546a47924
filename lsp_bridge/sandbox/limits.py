"""Resource limits of ``rootguard run``: memory, processes, the private tmpfs sizes.

The values come from ``[sandbox]`` (``core/sandbox_settings.py``; defaults there):

* **memory**: ``RLIMIT_DATA`` of every process (its heap and private writable
  mappings). Not ``RLIMIT_AS``: V8 and WebAssembly reserve tens of GiB of address
  space they never touch, so an address-space limit breaks Node while a data limit
  bounds what is really used.
* **processes**: ``RLIMIT_NPROC``, set by the exec shim *inside* the sandbox's user
  namespace, so it counts the sandbox's tasks, not the caller's whole session. The
  kernel does not apply ``RLIMIT_NPROC`` to uid 0, so when ``rootguard run`` is
  started as root it puts the sandbox in a ``pids`` cgroup of its own instead
  (``PidsCgroup``); where no such cgroup can be made, ``--print`` and the start say
  that the process count is not bounded.
* **tmp_size**: bubblewrap's ``--size`` on the private ``/tmp`` and the private home.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from lsp_bridge.core.sandbox_settings import UNLIMITED

CGROUP_ROOT = "/sys/fs/cgroup"


@dataclass(frozen=True)
class SandboxSettings:
    env: tuple[str, ...] = ()
    memory: int = UNLIMITED
    processes: int = UNLIMITED
    tmp_size: int = UNLIMITED

    def rlimits(self) -> tuple[tuple[str, int], ...]:
        """What the exec shim sets (``--rlimit NAME=N``)."""
        out = []
        if self.memory:
            out.append(("data", self.memory))
        if self.processes:
            out.append(("nproc", self.processes))
        return tuple(out)


def settings_of(session) -> SandboxSettings:
    """The session's ``[sandbox]``: every configuration's grants, the strictest of each limit."""
    configs = [config for _, config in session.configs()]
    if not configs:
        from lsp_bridge.core.settings import Config

        configs = [Config()]

    def strictest(name: str) -> int:
        values = [getattr(c, f"sandbox_{name}") for c in configs]
        bounded = [v for v in values if v != UNLIMITED]
        return min(bounded) if bounded else UNLIMITED

    env = tuple(dict.fromkeys(name for c in configs for name in c.sandbox_env))
    return SandboxSettings(env, strictest("memory"), strictest("processes"), strictest("tmp_size"))


class PidsCgroup:
    """A ``pids`` cgroup holding the sandbox (for root, whom ``RLIMIT_NPROC`` does not bind).

    ``start()`` makes it and moves this process in, so the bubblewrap started next is born
    inside; ``release()`` moves this process back out once it has started; ``close()``
    kills what is left and removes the cgroup."""

    def __init__(self, limit: int):
        self.limit = limit
        self.path: str | None = None
        self.home: str | None = None
        self.why_not: str | None = None

    @staticmethod
    def _locate() -> tuple[str, str] | None:
        """(the pids hierarchy's mount, this process's cgroup in it)."""
        try:
            with open("/proc/self/cgroup") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if "pids" in controllers.split(",") and os.path.isfile(os.path.join(CGROUP_ROOT, "pids", "cgroup.procs")):
                return os.path.join(CGROUP_ROOT, "pids"), path
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                try:
                    with open(os.path.join(CGROUP_ROOT, "cgroup.controllers")) as handle:
                        if "pids" in handle.read().split():
                            return CGROUP_ROOT, path
                except OSError:
                    return None
        return None

    def start(self) -> bool:
        found = self._locate()
        if found is None:
            self.why_not = "no pids cgroup controller"
            return False
        mount, own = found
        parent = os.path.join(mount, own.lstrip("/"))
        path = os.path.join(parent, f"rootguard-run-{os.getpid()}")
        try:
            os.mkdir(path, 0o755)
            with open(os.path.join(path, "pids.max"), "w") as handle:
                handle.write("max\n")  # this process and its threads are in it until bubblewrap has started
            with open(os.path.join(path, "cgroup.procs"), "w") as handle:
                handle.write(f"{os.getpid()}\n")
        except OSError as err:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            self.why_not = f"cannot make a pids cgroup ({err.strerror})"
            return False
        self.path, self.home = path, parent
        return True

    def release(self) -> None:
        if self.path is None or self.home is None:
            return
        with open(os.path.join(self.home, "cgroup.procs"), "w") as handle:
            handle.write(f"{os.getpid()}\n")
        with contextlib.suppress(OSError), open(os.path.join(self.path, "pids.max"), "w") as handle:
            handle.write(f"{self.limit}\n")

    def close(self) -> None:
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            self.release()
        for _ in range(50):
            try:
                with open(os.path.join(self.path, "cgroup.procs")) as handle:
                    pids = [int(p) for p in handle.read().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)
            import time

            time.sleep(0.02)
        with contextlib.suppress(OSError):
            os.rmdir(self.path)
        self.path = None


@contextlib.contextmanager
def pids_cgroup(limit: int) -> Iterator[PidsCgroup]:
    group = PidsCgroup(limit)
    try:
        yield group
    finally:
        group.close()


__all__ = ["PidsCgroup", "SandboxSettings", "pids_cgroup", "settings_of"]
