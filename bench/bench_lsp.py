"""The language server on the seed's ~61,000-file monorepo, each figure beside its baseline.

    python bench/bench_lsp.py [--dir DIR] [--repeat 5] [--startup-only] [--startup-repeat N]
    python bench/bench_lsp.py --dir DIR --compare OTHER/.venv/bin/python [--repeat 13]

``--dir`` is any fixture: a directory holding a bench-built monorepo (built
there when the directory is empty or absent), or any repository or folder of
your own (its ``packages/checkout``, else its first subdirectory, is the narrow
folder the window starts with, and the directory itself is the folder added).

Drives the real server (``python -m lsp_bridge``) over stdio with a minimal
JSON-RPC client and prints, in one run:

* start-up as the user waits for it: spawn → the first ``rootguard/status``
  (initialize, initialized, the status), beside a minimal pygls server's
  spawn → its first notification sent from ``initialized`` (13 lines, below:
  the floor any pygls server pays). Runs alternate, paired; the ratio is the
  median of the per-pair ratios (target, issue 29: ≤ 1.1×);
* ``didChangeWorkspaceFolders`` (add the repository root) to the first
  ``rootguard/status`` with ``widened``, beside a trivial request round trip
  on the same connection (the transport floor);
* what the user waits for after adding the folder: ``didChangeWorkspaceFolders``
  sent → the warning carrying the inventory (``window/showMessage``), beside
  ``find ROOT -type f | wc -l; du -sb ROOT/.git`` run as a shell command just
  before (paired: the ratio is the median of the per-run ratios), once after the
  server settled for 2 s (its warm-up done, as before a person acts) and once
  with the folder added the moment the first status arrives (the warm-up and
  the rest of start-up still running);
* the warning again in a first session: the scans an earlier session kept
  (``inventory/scan_store.py``: a directory unchanged since is not listed again)
  removed before it, as on a machine where the folder was never measured;
* the same inventory in this process (``InventoryCache().report``, imports
  warm, no scans kept), beside the same find+du: what the walk itself costs,
  server excluded;
* the server's peak RSS after the inventory, beside the bare pygls server's;
* re-inventory after touching one file: touch to the updated status, minus the
  watcher's 150 ms debounce, beside the cold inventory.

Caches: the servers get a cache and state directory of their own (``XDG_CACHE_HOME``,
``XDG_STATE_HOME`` in a temporary directory), filled by one unmeasured widening
first, as on a machine where Root Guard ran before (the detect-secrets patterns,
the repository's history answers, the kept scans; each validated at each use).

Bytecode: both servers run from byte-compiled caches, as after an install
(``compileall`` of the package first; ``PYTHONDONTWRITEBYTECODE`` is removed
from the servers' environment so any missing cache is written once, not
compiled again at every start).

``--compare PYTHON``: only the two widening rows, this checkout's server against the
one another checkout's environment runs (``git worktree add ../old REV``, its own
``.venv``), alternating run by run: on a machine whose speed drifts, the way to see
what a change did in milliseconds, where the ratios to find+du move with the drift.

Targets (issue 3, 15): status <= 30 ms median; warning <= 1.3x find+du, also
when added right at start-up; RSS <= 80 MB; re-inventory <= 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

MINIMAL_SERVER = """\
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("minimal", "1")


@server.feature(types.INITIALIZED)
def initialized(ls, params):
    ls.protocol.notify("minimal/status", {"roots": [f.uri for f in ls.workspace.folders.values()]})


server.start_io()
"""
DEBOUNCE = 0.15
SETTLE = 2.0
WARNING = 2  # window/showMessage type: the one-line widening warning


class Rpc:
    """A minimal stdio JSON-RPC client: messages are timestamped on arrival."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        self.started = time.perf_counter()
        stderr = open(os.environ.get("RG_STDERR", os.devnull), "w")  # noqa: SIM115 - kept open for the server's life
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
        self.inbox: queue.Queue = queue.Queue()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            self.inbox.put((time.perf_counter(), message))

    def send(self, method: str, params=None, *, request: bool = False):
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self._next += 1
            message["id"] = self._next
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return message.get("id")

    def wait(self, predicate, timeout: float = 120.0):
        deadline = time.perf_counter() + timeout
        while True:
            at, message = self.inbox.get(timeout=max(deadline - time.perf_counter(), 0.01))
            if predicate(message):
                return at, message

    def rss_peak_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self) -> None:
        try:
            self.send("shutdown", request=True)
            self.send("exit")
            self.proc.wait(5)
        except Exception:
            self.proc.kill()


def folder(path: str) -> dict:
    return {"uri": "file://" + path, "name": os.path.basename(path)}


def initialize(rpc: Rpc, folders: list[str]) -> float:
    rid = rpc.send(
        "initialize",
        {"processId": os.getpid(), "capabilities": {"workspace": {"workspaceFolders": True}},
         "workspaceFolders": [folder(f) for f in folders]},
        request=True,
    )
    at, _ = rpc.wait(lambda m: m.get("id") == rid)
    rpc.send("initialized", {})
    return at - rpc.started


def first_notification(argv: list[str], env: dict[str, str], folders: list[str], method: str) -> float:
    """Spawn → the first ``method`` notification, in seconds (initialize, then initialized)."""
    rpc = Rpc(argv, env)
    initialize(rpc, folders)
    at, _ = rpc.wait(lambda m: m.get("method") == method)
    rpc.close()
    return at - rpc.started


def fixture(directory: str) -> tuple[str, str]:
    """(folder to add, narrow folder) from any --dir, building the monorepo where nothing is."""
    from lsp_bridge.cli.demo_repo import REPO_NAME

    if not os.path.isdir(directory) or not os.listdir(directory):
        from bench_inventory import ensure_repo

        return ensure_repo(directory, 61_000, 300)
    built = os.path.join(directory, REPO_NAME)
    repo = built if os.path.isdir(built) else directory
    narrow = os.path.join(repo, "packages", "checkout")
    if not os.path.isdir(narrow):
        subdirs = sorted(e.path for e in os.scandir(repo) if e.is_dir() and not e.name.startswith("."))
        if not subdirs:
            sys.exit(f"{repo} has no subdirectory to start narrow in")
        narrow = subdirs[0]
    print(f"using {repo} (narrow folder {narrow})")
    return repo, narrow


def warning_after(server: list[str], env: dict[str, str], narrow: str, change: dict, *, settle: float) -> float:
    """Seconds from adding the folder to the warning, in a new server started on ``narrow``:
    the folder added ``settle`` seconds after the first status (0: the moment it arrives).
    The server is left the time to keep its scans (written after the warning) when it had none."""
    rpc = Rpc(server, env)
    try:
        initialize(rpc, [narrow])
        rpc.wait(lambda m: is_status(m))
        time.sleep(settle)
        sent = time.perf_counter()
        rpc.send("workspace/didChangeWorkspaceFolders", change)
        shown, _ = rpc.wait(is_warning)
        deadline = time.monotonic() + 10
        while not kept_scans(env) and time.monotonic() < deadline:
            time.sleep(0.05)
        return shown - sent
    finally:
        rpc.close()


def kept_scans(env: dict[str, str]) -> list[str]:
    """The scans the servers of ``env`` keep between sessions (``inventory/scan_store.py``)."""
    scans = os.path.join(env["XDG_CACHE_HOME"], "rootguard", "scans")
    return os.listdir(scans) if os.path.isdir(scans) else []


def compare(other: tuple[list[str], dict[str, str]], server: tuple[list[str], dict[str, str]],
            narrow: str, change: dict, rounds: int) -> None:
    """The two widening rows, this checkout's server against ``other``'s, alternating run by run
    (each a command and its environment)."""
    print(f"\nthis checkout vs {other[0][0]}, {rounds} alternating rounds, medians")
    for label, settle in (("folder added -> inventory warning", SETTLE), ("same, added right at start-up", 0.0)):
        ours: list[float] = []
        theirs: list[float] = []
        for round_ in range(rounds):
            order = ((ours, server), (theirs, other))
            for found, (argv, env) in order if round_ % 2 == 0 else order[::-1]:
                found.append(warning_after(argv, env, narrow, change, settle=settle))
        ratio = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
        print(f"{label:<38} {median_ms(ours)}   other {median_ms(theirs)}   x{ratio:5.2f}")


def is_status(message, predicate=lambda p: True) -> bool:
    return message.get("method") == "rootguard/status" and predicate(message["params"])


def median_ms(values) -> str:
    return f"{statistics.median(values) * 1000:8.1f} ms"


def is_warning(message) -> bool:
    """The widening warning carrying the inventory (the bench's client has no showMessageRequest)."""
    params = message.get("params") or {}
    return (message.get("method") == "window/showMessage" and params.get("type") == WARNING
            and "widened" in params.get("message", ""))


def find_du(repo: str) -> float:
    """Seconds for the baseline: count the files, size the git directory (one shell, as a user types it)."""
    start = time.perf_counter()
    subprocess.run(f"find {repo} -type f | wc -l; du -sb {repo}/.git", shell=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "rg-bench"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--startup-only", action="store_true", help="only spawn → first status, beside the minimal server")
    parser.add_argument("--startup-repeat", type=int, help="paired start-up runs (default: twice --repeat)")
    parser.add_argument("--compare", metavar="PYTHON",
                        help="only the two widening rows, against the server PYTHON runs (the interpreter of "
                             "another checkout's environment), alternating; --repeat rounds")
    args = parser.parse_args()
    repo, narrow = fixture(args.dir)
    # As an install does (pip byte-compiles what it installs): otherwise, with
    # PYTHONDONTWRITEBYTECODE set, every start would compile our sources while
    # pygls's come compiled, and the bench would measure the compiler.
    import compileall

    compileall.compile_dir(os.path.join(os.path.dirname(HERE), "lsp_bridge"), quiet=1)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    config_dir = tempfile.mkdtemp(prefix="rg-bench-config-")
    config = os.path.join(config_dir, "config.toml")
    with open(config, "w") as handle:
        handle.write("version = 2\n")
    env["ROOTGUARD_CONFIG"] = config
    # Caches and acknowledgements of the bench's own (the user's are shared by every
    # install on the machine, whose detect-secrets paths differ), filled once, unmeasured,
    # as on a machine where Root Guard has run before: the detect-secrets patterns and
    # the repository's history answers, both validated at each use (docs/cli.md).
    for variable in ("XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[variable] = os.path.join(config_dir, variable.lower())
    server = [sys.executable, "-m", "lsp_bridge"]
    minimal = [sys.executable, "-c", MINIMAL_SERVER]
    change = {"event": {"added": [folder(repo)], "removed": []}}
    warning_after(server, env, narrow, change, settle=SETTLE)  # fills the caches (the warm-up done first), unmeasured
    if args.compare:
        # -P: each package from its interpreter's own environment, never from the current
        # directory; and caches of its own (the pattern cache is keyed by the installed plugins'
        # path: shared, each would throw the other's away and import detect-secrets every time).
        other_env = dict(env, XDG_CACHE_HOME=env["XDG_CACHE_HOME"] + "-compared",
                         XDG_STATE_HOME=env["XDG_STATE_HOME"] + "-compared")
        other = [args.compare, "-P", "-m", "lsp_bridge"]
        warning_after(other, other_env, narrow, change, settle=SETTLE)
        compare((other, other_env), ([sys.executable, "-P", "-m", "lsp_bridge"], env), narrow, change, args.repeat)
        return 0

    ours_start, floor_start = [], []
    for round_ in range(args.startup_repeat or max(args.repeat, 1) * 2):  # short and noisy: twice the rounds
        pair = {}
        order = (("ours", server, "rootguard/status"), ("floor", minimal, "minimal/status"))
        for name, argv, method in order if round_ % 2 == 0 else order[::-1]:
            pair[name] = first_notification(argv, env, [narrow], method)
        ours_start.append(pair["ours"])
        floor_start.append(pair["floor"])
    paired = statistics.median(o / f for o, f in zip(ours_start, floor_start, strict=True))
    print(f"\nstart-up, {len(ours_start)} paired runs, medians ({narrow})")
    print(f"  spawn -> first rootguard/status     {median_ms(ours_start)}")
    print(f"  minimal pygls: spawn -> first notif {median_ms(floor_start)}")
    print(f"  ratio (median of pairs)             x{paired:5.2f}   target <= 1.1x (issue 29)")
    if args.startup_only:
        return 0

    status_lat, rtt, warn, warn_base, bare_rss, rss, touch, inv = [], [], [], [], [], [], [], []
    early, early_base = [], []  # the folder added right after the first status (the warm-up still running)
    first, first_base = [], []  # a first session: no scans kept by an earlier one
    for _ in range(args.repeat):
        bare = Rpc(minimal, env)
        initialize(bare, [narrow])
        bare.wait(lambda m: m.get("method") == "minimal/status")
        bare_rss.append(bare.rss_peak_kb())
        bare.close()

        rpc = Rpc(server, env)
        initialize(rpc, [narrow])
        rpc.wait(lambda m: is_status(m))
        rpc.wait(lambda m: is_status(m, lambda p: p["mounts"] is not None))
        time.sleep(SETTLE)  # the start-up warm-up finishes, as it would before a user acts
        for _ in range(3):  # transport floor: a trivial request
            sent = time.perf_counter()
            rid = rpc.send("rootguard/inventory", {}, request=True)
            at, _ = rpc.wait(lambda m, rid=rid: m.get("id") == rid)
            rtt.append(at - sent)
        warn_base.append(find_du(repo))
        sent = time.perf_counter()
        rpc.send("workspace/didChangeWorkspaceFolders", change)
        at, _ = rpc.wait(lambda m: is_status(m, lambda p: p["widened"]))
        status_lat.append(at - sent)
        shown, _ = rpc.wait(is_warning)
        warn.append(shown - sent)
        done, _ = rpc.wait(lambda m: is_status(m, lambda p: p["inventory"] is not None))
        inv.append(done - at)
        rss.append(rpc.rss_peak_kb())
        time.sleep(1.0)  # let the mount reconciliation's status arrive, then start clean
        while not rpc.inbox.empty():
            rpc.inbox.get_nowait()
        target = next((e.path for e in sorted(os.scandir(repo), key=lambda e: e.name) if e.is_file(follow_symlinks=False)),
                      os.path.join(repo, "README.md"))
        sent = time.perf_counter()
        os.utime(target)
        at, _ = rpc.wait(lambda m: is_status(m, lambda p: p["inventory"] is not None), timeout=10)
        touch.append(max(at - sent - DEBOUNCE, 0.0))
        rpc.close()

        early_base.append(find_du(repo))
        early.append(warning_after(server, env, narrow, change, settle=0.0))  # again, widened at once

        shutil.rmtree(os.path.join(env["XDG_CACHE_HOME"], "rootguard", "scans"), ignore_errors=True)  # as before any session
        first_base.append(find_du(repo))
        first.append(warning_after(server, env, narrow, change, settle=SETTLE))  # and kept again for the next

    # In this process: the walk itself (a cache directory of its own, where scans are never kept).
    os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"] + "-in-process"

    from lsp_bridge.inventory.scan import InventoryCache, warm_up

    warm_up()
    in_process, in_process_base = [], []
    for _ in range(max(args.repeat, 3)):
        in_process_base.append(find_du(repo))
        start = time.perf_counter()
        InventoryCache().report([narrow], [repo])
        in_process.append(time.perf_counter() - start)

    def row(name, ours, theirs, their_name, unit=median_ms, target="", paired=False):
        a, b = statistics.median(ours), statistics.median(theirs)
        ratio = statistics.median(o / t for o, t in zip(ours, theirs, strict=True)) if paired else a / b
        print(f"{name:<38} {unit(ours)}   {their_name:<28} {unit(theirs)}   x{ratio:5.2f}   {target}")

    files = sum(len(f) for _, _, f in os.walk(repo))
    print(f"\nrepository: {repo} ({files:,} files); {args.repeat} runs, medians (paired rows: median of per-run ratios)\n")
    print(f"{'measure':<38} {'ours':>11}   {'baseline':<28} {'value':>11}   ratio   target")
    row("didChangeWorkspaceFolders -> status", status_lat, rtt, "trivial request round trip", target="<= 30 ms")
    row("folder added -> inventory warning", warn, warn_base, "find | wc -l; du -sb .git", target="<= 1.3x", paired=True)
    row("same, added right at start-up", early, early_base, "find | wc -l; du -sb .git", target="<= 1.3x", paired=True)
    row("same, first session (nothing kept)", first, first_base, "find | wc -l; du -sb .git", paired=True)
    row("inventory in process (warm imports)", in_process, in_process_base, "find | wc -l; du -sb .git", paired=True)
    row("widened status -> inventory status", inv, warn_base, "find | wc -l; du -sb .git", paired=True)
    kb = lambda values: f"{statistics.median(values) / 1024:8.1f} MB"  # noqa: E731
    row("server peak RSS after inventory", rss, bare_rss, "minimal pygls server", unit=kb, target="<= 80 MB")
    row("touch one file -> new inventory", touch, inv, "cold inventory", target="<= 50 ms (debounce excluded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
