"""``rootguard run``: real bubblewrap on a pnpm-style monorepo, through the real command.

Every test runs ``python -m lsp_bridge.cli.main run ...`` and asserts what the
command inside saw (its stdout) and what the host holds afterwards. The
unprivileged test runs the sandbox command line ``--print`` shows as ``nobody``
(``setpriv``), the way a user without root starts it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from lsp_bridge.cli.demo_repo import build_monorepo

BWRAP = shutil.which("bwrap")
pytestmark = pytest.mark.skipif(BWRAP is None or sys.platform != "linux", reason="needs bubblewrap on Linux")

PROJECT_TOML = """\
version = 2
[[paths]]
id = "no-env"
path = "."
policies = { read = "deny", write = "deny" }
includes = ["**/.env*"]

[[paths]]
id = "ask-secrets"
path = "packages/checkout/secrets"
policies = { read = "request", write = "request" }

[[paths]]
id = "absent-key"
path = "packages/checkout/deploy.key"
policies = { read = "deny", write = "deny" }
"""


@pytest.fixture(scope="module")
def world():
    """The demo monorepo in a directory other users may traverse (for the setpriv test)."""
    base = tempfile.mkdtemp(prefix="rg-sandbox-", dir="/tmp")
    os.chmod(base, 0o755)
    demo = build_monorepo(base, packages=4, files_per_package=12, narrow_files=24, commits=4, worktree=False)
    with open(os.path.join(demo.repo, ".rootguard.toml"), "w") as handle:
        handle.write(PROJECT_TOML)
    narrow = demo.narrow
    with open(os.path.join(narrow, ".env"), "w") as handle:
        handle.write("LOCAL_TOKEN=local-secret-value\n")
    os.makedirs(os.path.join(narrow, "secrets"))
    with open(os.path.join(narrow, "secrets", "token.txt"), "w") as handle:
        handle.write("request-level-secret\n")
    outside = os.path.join(base, "outside")
    os.makedirs(outside)
    with open(os.path.join(outside, "private.txt"), "w") as handle:
        handle.write("outside-content\n")
    user = os.path.join(base, "user-config.toml")
    with open(user, "w") as handle:
        handle.write(textwrap.dedent(f"""\
            version = 2
            [[paths]]
            id = "ui-manifest"
            path = "{demo.package('ui')}/package.json"
            policies = {{ read = "allow", write = "deny" }}
            """))
    yield {"demo": demo, "base": base, "outside": outside, "user": user}
    shutil.rmtree(base, ignore_errors=True)


def env_for(world, **extra) -> dict:
    env = dict(os.environ)
    env["ROOTGUARD_CONFIG"] = world["user"]
    env.update(extra)
    return env


def run(world, *args, root=None, env=None, cwd=None, input=None, timeout=60):
    roots = [root or world["demo"].narrow]
    argv = [sys.executable, "-m", "lsp_bridge.cli.main", "run"]
    for r in roots:
        argv += ["--root", r]
    argv += list(args)
    return subprocess.run(argv, capture_output=True, text=input is None or isinstance(input, str), input=input,
                          env=env or env_for(world), cwd=cwd or world["demo"].narrow, timeout=timeout)


def sh(world, script, **kw):
    return run(world, "--", "/bin/sh", "-c", script, **kw)


def probe(path: str) -> str:
    """Shell that prints 'path: <first line or the error class>'."""
    return f'if v=$(head -c 200 "{path}" 2>&1); then echo "{path}: read: $v"; else echo "{path}: $v"; fi'


def tree_digest(root: str) -> dict[str, str]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                found[path] = "link:" + os.readlink(path)
            else:
                with open(path, "rb") as handle:
                    found[path] = hashlib.sha256(handle.read()).hexdigest()
    return found


def test_narrow_package_reads_and_writes_its_own_files_and_sees_nothing_else(world):
    demo = world["demo"]
    ui_pkg = demo.package("ui")
    script = "; ".join([
        "cat package.json >/dev/null && echo own-read-ok",
        "echo written > out.txt && cat out.txt",
        probe(demo.env_file),
        probe(os.path.join(demo.narrow, ".env")),
        f'ls {demo.package("payments")} 2>&1 | head -1',
        probe(os.path.join(world["outside"], "private.txt")),
        probe(os.path.join(ui_pkg, "package.json")),
        f"ls {ui_pkg}/src 2>&1 | head -1",
        "cat node_modules/react/package.json",
        f'touch {demo.store}/poison 2>&1 | head -1',
        "rm -f out.txt",
    ])
    result = sh(world, script)
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "own-read-ok" in out and "written" in out
    assert "DATABASE_URL" not in out and "local-secret-value" not in out
    assert f"{demo.env_file}: head: cannot open" in out  # the repository .env: not even there
    assert f"{os.path.join(demo.narrow, '.env')}: read: \n" in out or "Permission denied" in out  # masked
    assert "No such file or directory" in out.split("\n")[4]  # sibling package
    assert "outside-content" not in out
    assert '"name": "@shop/ui"' in out  # the single-file grant
    assert f"ls: cannot access '{ui_pkg}/src': No such file or directory" in out  # its siblings
    assert '"name": "react"' in out  # the store through the package's link
    assert "Read-only file system" in out  # ... not writable


def test_request_level_path_is_hidden_with_one_line_saying_how_to_grant_it(world):
    demo = world["demo"]
    secrets = os.path.join(demo.narrow, "secrets")
    result = sh(world, f"ls {secrets}; {probe(os.path.join(secrets, 'token.txt'))}")
    assert "request-level-secret" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if "hidden" in line]
    assert len(lines) == 1 and secrets in lines[0] and world["user"] in lines[0] and 'read = "allow"' in lines[0]


def test_an_absent_denied_path_is_watched_not_created(world):
    """A deny rule on a file that does not exist yet: masking it would make it on the host, so nothing
    is made and nothing is said at each run; the file appearing on the host while the command runs
    stops the sandbox (it would have been visible inside)."""
    demo = world["demo"]
    key = os.path.join(demo.narrow, "deploy.key")
    result = sh(world, "true")
    assert result.returncode == 0
    assert "not enforceable" not in result.stderr
    assert not os.path.lexists(key)
    loop = f"echo ready; while true; do cat {key} 2>/dev/null; sleep 0.05; done"
    argv = [sys.executable, "-m", "lsp_bridge.cli.main", "run", "--root", demo.narrow, "--", "/bin/sh", "-c", loop]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(world),
                            cwd=demo.narrow)
    try:
        assert proc.stdout.readline().strip() == "ready"
        with open(key, "w") as handle:
            handle.write("PRIVATE KEY\n")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(FileNotFoundError):
            os.remove(key)
    # Stopped the moment the kernel reported the new name (a read racing that report may still see it:
    # docs/confinement.md says so); the command runs no further.
    assert proc.returncode == 125
    assert f"stopped the sandbox: {key}: it was created while the command ran and the policy hides it" in err


def test_children_of_children_are_confined(world):
    demo = world["demo"]
    inner = f"sh -c 'sh -c \"cat {demo.env_file} 2>&1; ls {demo.package('payments')} 2>&1\"'"
    result = sh(world, inner)
    assert "DATABASE_URL" not in result.stdout and "No such file or directory" in result.stdout
    assert result.stdout.count("No such file or directory") == 2


def test_tsc_style_upward_config_lookup_works_with_the_suggested_mounts(world):
    lookup = textwrap.dedent("""\
        d=$PWD
        while [ "$d" != / ]; do
          if [ -f "$d/tsconfig.base.json" ]; then echo "found $d/tsconfig.base.json"; cat "$d/tsconfig.base.json"; break; fi
          d=$(dirname "$d")
        done
        grep -o '"extends": "[^"]*"' tsconfig.json
        cat ../../tsconfig.base.json >/dev/null && echo extends-ok
        cat node_modules/zod/package.json
        """)
    result = sh(world, lookup)
    assert f"found {world['demo'].repo}/tsconfig.base.json" in result.stdout
    assert '"strict": true' in result.stdout and "extends-ok" in result.stdout and '"zod"' in result.stdout
    # ... and without them the same lookup fails quietly, which is why they are there
    bare = run(world, "--no-toolchain", "--", "/bin/sh", "-c", lookup)
    assert "found" not in bare.stdout and "extends-ok" not in bare.stdout


def test_git_and_rootguard_toml_are_read_only_and_env_masked_at_the_repository_root(world):
    demo = world["demo"]
    repo = demo.repo
    script = "; ".join([
        f"touch {repo}/.git/poison 2>&1",
        f"{{ echo x >> {repo}/.rootguard.toml; }} 2>&1",
        f"cat {repo}/.rootguard.toml | head -1",
        probe(demo.env_file),
        f"echo ok > {repo}/packages/payments/new.txt && echo pkg-write-ok && rm {repo}/packages/payments/new.txt",
        "git -C . log --oneline -1 >/dev/null 2>&1 && echo git-read-ok",
    ])
    result = sh(world, script, root=repo)
    out = result.stdout
    assert "touch: cannot touch" in out and "Read-only file system" in out
    assert out.count("Read-only file system") >= 2
    assert "version = 2" in out  # readable
    assert "DATABASE_URL" not in out
    assert "pkg-write-ok" in out


def test_root_guards_own_cache_inside_a_writable_root_is_read_only(world):
    """A root that holds the user's cache (a home folder opened as a root): the kept scans the next
    inventory trusts cannot be forged or removed from inside the sandbox."""
    narrow = world["demo"].narrow
    cache_home = os.path.join(narrow, "cache-home")
    scans = os.path.join(cache_home, "rootguard", "scans")
    os.makedirs(scans)
    kept = os.path.join(scans, "pkg-0.json")
    with open(kept, "w") as handle:
        handle.write("{}")
    try:
        script = "; ".join([
            f"{{ echo forged > {kept}; }} 2>&1",
            f"touch {scans}/new.json 2>&1",
            f"rm -f {kept} 2>&1",
            f"echo ok > {narrow}/beside-the-cache.txt && echo root-write-ok",
        ])
        result = sh(world, script, env=env_for(world, XDG_CACHE_HOME=cache_home))
        assert result.stdout.count("Read-only file system") == 3, result.stdout + result.stderr
        assert "root-write-ok" in result.stdout
        with open(kept) as handle:
            assert handle.read() == "{}"
        assert sorted(os.listdir(scans)) == ["pkg-0.json"]
    finally:
        shutil.rmtree(cache_home, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(narrow, "beside-the-cache.txt"))


def test_root_guards_own_cache_not_made_yet_is_made_read_only_before_the_command_runs(world):
    """On a first run there is no cache directory yet: the sandbox must not let the command create it."""
    narrow = world["demo"].narrow
    cache_home = os.path.join(narrow, "cache-home")
    os.makedirs(cache_home)
    own = os.path.join(cache_home, "rootguard")
    try:
        result = sh(world, f"mkdir -p {own}/scans 2>&1; echo forged > {own}/scans/x.json 2>&1; ls -A {own}",
                    env=env_for(world, XDG_CACHE_HOME=cache_home))
        assert "Read-only file system" in result.stdout, result.stdout + result.stderr
        said = [line for line in result.stderr.splitlines() if line.startswith("rootguard run: not enforceable")]
        assert not [line for line in said if own in line], said
        assert "scans" not in os.listdir(own)  # made on the host, private; only Root Guard's own writes in it
        assert os.stat(own).st_mode & 0o777 == 0o700
    finally:
        shutil.rmtree(cache_home, ignore_errors=True)


def test_host_tree_is_byte_identical_except_what_was_allowed(world):
    demo = world["demo"]
    before = tree_digest(world["base"])
    script = "; ".join([
        "echo allowed > allowed.txt",
        f"echo x > {demo.repo}/README.md",
        f"echo x > {demo.store}/lock.yaml",
        f"echo x > {demo.package('ui')}/package.json",
        f"echo x > {os.path.join(demo.narrow, '.env')}",
        f"echo x > {world['outside']}/private.txt",
        "echo x > /tmp/scratch",
        "true",
    ])
    result = sh(world, script)
    assert result.returncode == 0
    after = tree_digest(world["base"])
    added = os.path.join(demo.narrow, "allowed.txt")
    try:
        assert set(after) - set(before) == {added}
        assert {k: v for k, v in after.items() if k != added} == before
    finally:
        os.remove(added)


@pytest.mark.parametrize("code", [0, 1, 3, 42])
def test_exit_status_is_the_commands(world, code):
    assert sh(world, f"exit {code}").returncode == code


def test_a_command_killed_by_a_signal_exits_128_plus_n(world):
    assert sh(world, "kill -TERM $$").returncode == 128 + 15


def test_missing_bubblewrap_is_125_and_nothing_runs(world):
    demo = world["demo"]
    marker = os.path.join(demo.narrow, "ran.txt")
    env = env_for(world, PATH="/nonexistent")
    result = run(world, "--", "/bin/sh", "-c", f"echo ran > {marker}", env=env)
    assert result.returncode == 125
    assert result.stderr.count("\n") == 1 and "bubblewrap (bwrap) is not installed" in result.stderr
    assert not os.path.exists(marker)


def test_landlock_only_is_explicit_and_labelled(world):
    from lsp_bridge.sandbox.landlock import abi

    if abi() <= 0:
        pytest.skip("no Landlock in this kernel")
    demo = world["demo"]
    env = env_for(world, PATH="/nonexistent")
    script = (f"/usr/bin/head -1 package.json; /usr/bin/head -1 {demo.env_file} 2>&1; "
              f"/usr/bin/head -1 {world['outside']}/private.txt 2>&1; true")
    result = run(world, "--landlock-only", "--", "/bin/sh", "-c", script, env=env)
    assert result.returncode == 0, result.stderr
    assert "DEGRADED MODE" in result.stderr
    assert "{" in result.stdout and "Permission denied" in result.stdout
    assert "DATABASE_URL" not in result.stdout and "outside-content" not in result.stdout


def test_stdin_and_stdout_pass_through_untouched(world):
    payload = bytes(range(256)) * 64 + b"Content-Length: 2\r\n\r\n{}"
    result = run(world, "--", "/bin/cat", input=payload)
    assert result.returncode == 0 and result.stdout == payload


def test_bad_root_is_125_with_one_line(world):
    result = run(world, "--", "true", root=os.path.join(world["base"], "missing"))
    assert result.returncode == 125 and "not an existing directory" in result.stderr


def test_print_shows_the_sandbox_command_line(world):
    demo = world["demo"]
    result = run(world, "--print", "--", "make", "test")
    assert result.returncode == 0
    argv = shlex.split(result.stdout.replace("\\\n", " "))
    assert argv[0].endswith("bwrap")
    text = " ".join(argv)
    assert f"--bind {demo.narrow} {demo.narrow}" in text
    assert f"--ro-bind {demo.store} {demo.store}" in text
    assert f"--ro-bind /dev/null {os.path.join(demo.narrow, '.env')}" in text
    assert "--tmpfs /tmp" in text and "--unshare-pid" in text and "--die-with-parent" in text
    assert argv[-2:] == ["make", "test"]


@pytest.mark.parametrize("how, said", [
    ("rename", "another file was renamed onto it"),
    ("delete-and-create", "it was deleted"),
])
def test_replacing_a_mask_on_the_host_stops_the_sandbox(world, how, said):
    demo = world["demo"]
    masked = os.path.join(demo.narrow, ".env")
    with open(masked) as handle:
        original = handle.read()
    loop = f"echo ready; while true; do cat {masked} 2>/dev/null; sleep 0.05; done"
    argv = [sys.executable, "-m", "lsp_bridge.cli.main", "run", "--root", demo.narrow, "--", "/bin/sh", "-c", loop]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(world),
                            cwd=demo.narrow)
    replacement = os.path.join(demo.narrow, "replacement.tmp")
    try:
        assert proc.stdout.readline().strip() == "ready"
        if how == "rename":
            with open(replacement, "w") as handle:
                handle.write("REPLACED=1\n")
            os.rename(replacement, masked)
        else:
            os.remove(masked)
            with open(masked, "w") as handle:
                handle.write("REPLACED=1\n")
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        with open(masked, "w") as handle:
            handle.write(original)
    assert proc.returncode == 125
    assert f"stopped the sandbox: {masked}: {said}" in err


def test_an_in_place_edit_keeps_the_mask_and_the_sandbox_running(world):
    demo = world["demo"]
    masked = os.path.join(demo.narrow, ".env")
    with open(masked) as handle:
        original = handle.read()
    script = f"echo ready; read line; cat {masked} 2>&1; echo done"
    argv = [sys.executable, "-m", "lsp_bridge.cli.main", "run", "--root", demo.narrow, "--", "/bin/sh", "-c", script]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(world), cwd=demo.narrow)
    try:
        assert proc.stdout.readline().strip() == "ready"
        with open(masked, "a") as handle:  # same inode: the mask still covers it
            handle.write("EDITED_IN_PLACE=1\n")
        out, err = proc.communicate("go\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        with open(masked, "w") as handle:
            handle.write(original)
    assert proc.returncode == 0, err
    assert "EDITED_IN_PLACE" not in out and "local-secret-value" not in out and "done" in out


def _as_nobody():
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root to switch to nobody with setpriv")
    found = subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True, timeout=120)
    if found.returncode != 0:
        pytest.skip("no user nobody")
    uid = int(found.stdout)
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"], uid


def _system_python_running_rootguard() -> list[str] | None:
    """The system interpreter with this checkout and its packages on the path (the
    test interpreter may live where nobody cannot read), when it is the same Python."""
    system = "/usr/bin/python3"
    if not os.access(system, os.X_OK):
        return None
    version = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True,
                             timeout=120)
    if version.stdout.strip() != str(sys.version_info[:2]):
        return None
    import site

    import lsp_bridge

    checkout = os.path.dirname(os.path.dirname(os.path.abspath(lsp_bridge.__file__)))
    path = os.pathsep.join([checkout, *site.getsitepackages()])
    return ["env", f"PYTHONPATH={path}", "HOME=/nonexistent", system, "-m", "lsp_bridge.cli.main"]


@pytest.fixture
def narrow_owned_by_nobody(world):
    demo = world["demo"]
    prefix, uid = _as_nobody()

    def chown(owner):
        for dirpath, _dirnames, filenames in os.walk(demo.narrow):
            for name in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
                os.lchown(name, owner, -1)

    chown(uid)
    yield prefix, uid
    chown(0)


NOBODY_SCRIPT = "; ".join([
    "id -u",
    "echo mine > mine.txt && cat mine.txt && rm mine.txt",
    "cat {env} 2>&1",
    "cat {local_env} 2>&1",
    "ls {payments} 2>&1",
    "cat node_modules/react/package.json",
    "touch {store}/poison 2>&1",
    "sh -c 'cat {env}' 2>&1",
    "true",
])


def _check_nobody_output(result, uid):
    if "setting up uid map" in result.stderr or "No permissions to create new namespace" in result.stderr:
        pytest.skip(f"user namespaces unavailable to nobody: {result.stderr.strip()}")
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert out.splitlines()[0] == str(uid) and "mine" in out
    assert "DATABASE_URL" not in out and "local-secret-value" not in out
    assert out.count("No such file or directory") >= 3 and '"name": "react"' in out
    assert "Read-only file system" in out


def test_unprivileged_user_runs_rootguard_run(world, narrow_owned_by_nobody):
    """``rootguard run`` itself as ``nobody``: bubblewrap without setuid, user namespaces."""
    prefix, uid = narrow_owned_by_nobody
    command = _system_python_running_rootguard()
    if command is None:
        pytest.skip("no system Python of the test's version to run rootguard as nobody")
    demo = world["demo"]
    script = NOBODY_SCRIPT.format(env=demo.env_file, local_env=os.path.join(demo.narrow, ".env"),
                                  payments=demo.package("payments"), store=demo.store)
    result = subprocess.run([*prefix, *command, "run", "--root", demo.narrow, "--", "/bin/sh", "-c", script],
                            capture_output=True, text=True, cwd=demo.narrow, timeout=60,
                            env={**env_for(world), "PATH": os.environ.get("PATH", os.defpath)})
    _check_nobody_output(result, uid)
    assert "hidden (needs approval" in result.stderr


def test_unprivileged_user_runs_the_printed_command_line(world, narrow_owned_by_nobody):
    """The command line ``--print`` shows, run as ``nobody``: it is the whole sandbox."""
    prefix, uid = narrow_owned_by_nobody
    demo = world["demo"]
    script = NOBODY_SCRIPT.format(env=demo.env_file, local_env=os.path.join(demo.narrow, ".env"),
                                  payments=demo.package("payments"), store=demo.store)
    # HOME: one nobody may enter (the caller's dotfiles are bound from the caller's home)
    printed = run(world, "--print", "--", "/bin/sh", "-c", script, env=env_for(world, HOME="/nonexistent"))
    argv = shlex.split(printed.stdout.replace("\\\n", " "))
    result = subprocess.run([*prefix, *argv], capture_output=True, text=True, cwd="/", timeout=60)
    _check_nobody_output(result, uid)


def test_profile_api_is_data(world):
    """The API ``rootguard trace`` builds on: a profile is data, rendered on demand."""
    from lsp_bridge.core.session import open_session
    from lsp_bridge.sandbox import build_profile

    session = open_session([world["demo"].narrow], env=env_for(world))
    start = time.perf_counter()
    profile = build_profile(session, landlock=False)
    assert time.perf_counter() - start < 5
    kinds = {op.kind for op in profile.ops}
    assert {"bind", "ro-bind", "mask-file", "mask-dir", "tmpfs", "proc", "dev"} <= kinds
    args = profile.bwrap_args()
    assert args[-1] == "--new-session" and "--new-session" not in profile.bwrap_args(terminal=True)
    assert {"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-user", "--disable-userns"} <= set(args)
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert profile.shim_argv(["x"]) == ["x"]  # no shim without Landlock
    assert [h.path for h in profile.hidden if h.decision == "request"] == [os.path.join(world["demo"].narrow, "secrets")]


def test_docker_command_has_the_same_mount_set_read_only_where_the_sandbox_is(world):
    demo = world["demo"]
    repo = demo.repo
    argv = [sys.executable, "-m", "lsp_bridge.cli.main", "mounts", "--docker", "--image", "node:22", repo]
    result = subprocess.run(argv, capture_output=True, text=True, env=env_for(world), timeout=60)
    assert result.returncode == 0, result.stderr
    args = shlex.split(result.stdout)
    assert args[:8] == ["docker", "run", "--rm", "-i", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}"]
    text = " ".join(args)
    assert f"-v {repo}:/workspace:rw" in text
    assert f"-v {repo}/.git:/workspace/.git:ro" in text
    assert f"-v {repo}/.rootguard.toml:/workspace/.rootguard.toml:ro" in text
    assert "-v /dev/null:/workspace/.env:ro" in text
    assert "-v /dev/null:/workspace/packages/checkout/.env:ro" in text
    assert "--mount type=tmpfs,target=/workspace/packages/checkout/secrets,tmpfs-mode=0555,readonly" in text
    assert args[-3:] == ["-w", "/workspace", "node:22"]
    # ... and the sandbox makes the same paths read-only
    printed = run(world, "--print", "--", "true", root=repo).stdout
    assert f"--ro-bind {repo}/.git {repo}/.git" in printed.replace("\\\n", " ").replace("  ", " ")


def test_a_request_mode_worktree_is_hidden_with_the_setting_that_grants_it(tmp_path):
    base = tmp_path / "wt"
    demo = build_monorepo(str(base), packages=3, files_per_package=4, narrow_files=4, commits=3, worktree=True)
    user = tmp_path / "user.toml"
    user.write_text('version = 2\n[workspace]\nworktrees = "request"\n')
    sibling = os.path.join(demo.worktree, "packages", "checkout")
    argv = [sys.executable, "-m", "lsp_bridge.cli.main", "run", "--root", demo.narrow, "--", "ls", sibling]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "ROOTGUARD_CONFIG": str(user)})
    assert result.returncode == 2 and "No such file or directory" in result.stderr
    # The sibling's tsconfig.base.json (a toolchain rule) is decided by the engine too: request there.
    [line] = [line for line in result.stderr.splitlines() if "hidden" in line and line.endswith(
        "always needs approval)") and f"{sibling};" in line]
    assert sibling in line and 'worktrees = "include"' in line and str(user) in line


def test_a_rule_reading_the_whole_repository_is_mounted_under_the_narrow_root(world, tmp_path):
    from lsp_bridge.core.session import open_session
    from lsp_bridge.sandbox import build_profile

    demo = world["demo"]
    user = tmp_path / "user.toml"
    user.write_text(f'version = 2\n[[paths]]\nid = "read-repo"\npath = "{demo.repo}"\n'
                    'policies = { read = "allow", write = "deny" }\n')
    session = open_session([demo.narrow], env={**env_for(world), "ROOTGUARD_CONFIG": str(user)})
    profile = build_profile(session, landlock=False, toolchain=False)
    targets = [(op.kind, op.target) for op in profile.ops]
    # the repository read-only first, then the narrow root on top (the rule denies writing it too)
    assert targets.index(("ro-bind", demo.repo)) < targets.index(("ro-bind", demo.narrow))
    assert ("mask-file", os.path.join(demo.narrow, ".env")) in targets  # the project's deny still stands


async def test_a_real_mcp_server_runs_under_rootguard_run_over_stdio(world, tmp_path):
    """The mcp SDK's client talks to ``rootguard run -- rootguard mcp``: stdio passes through,
    the server's refusals and the kernel's agree, and the server cannot write outside."""
    import warnings

    from mcp import Client, StdioServerParameters

    import lsp_bridge

    demo = world["demo"]
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(lsp_bridge.__file__)))
    config = os.path.join(world["base"], "mcp-user.toml")
    grants = {"python": os.path.realpath(sys.base_prefix), "checkout": checkout, "this-file": config}
    state = f"/tmp/rg-state-{os.getpid()}-{id(world)}"  # the sandbox's private /tmp: the audit log stays there
    with open(config, "w") as handle:
        handle.write("version = 2\n")
        for name, path in grants.items():  # the server's own runtime, read-only
            handle.write(f'[[paths]]\nid = "{name}"\npath = "{path}"\npolicies = {{ read = "allow", write = "deny" }}\n')
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/nonexistent", "PYTHONPATH": checkout,
           "ROOTGUARD_CONFIG": config, "XDG_STATE_HOME": state, "ROOTGUARD_TRAY_SOCKET": "/tmp/no-tray.sock"}
    args = ["-m", "lsp_bridge.cli.main", "run", "--root", demo.narrow, "--",
            sys.executable, "-m", "lsp_bridge.cli.main", "mcp", "--root", demo.narrow]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=demo.narrow)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "read_file" in tools
            manifest = await client.call_tool("read_file", {"project_id": "checkout", "relative_path": "package.json"})
            assert '"name": "@shop/checkout"' in manifest.content[0].text
            secret = await client.call_tool("read_file", {"project_id": "checkout", "relative_path": ".env"})
            assert secret.is_error and "local-secret-value" not in str(secret.content)
    # The inner server's audit log went to the sandbox's private /tmp (the host side only records the
    # configuration it approved: core/config_trust.py).
    assert not os.path.exists(os.path.join(state, "rootguard", "audit.jsonl"))
    shutil.rmtree(state, ignore_errors=True)


def test_invalid_configuration_and_bad_usage_are_125_and_nothing_runs(world, tmp_path):
    demo = world["demo"]
    marker = os.path.join(demo.narrow, "ran.txt")
    broken = tmp_path / "broken.toml"
    broken.write_text("version = 2\n[workspace\n")
    bad_config = run(world, "--", "/bin/sh", "-c", f"echo ran > {marker}", env=env_for(world, ROOTGUARD_CONFIG=str(broken)))
    assert bad_config.returncode == 125
    assert f"invalid configuration: {broken}:2:" in bad_config.stderr and bad_config.stderr.count("\n") == 1
    bad_option = run(world, "--bogus", "--", "/bin/sh", "-c", f"echo ran > {marker}")
    assert bad_option.returncode == 125 and "COMMAND was not run" in bad_option.stderr
    no_command = run(world, "--")
    assert no_command.returncode == 125 and "no COMMAND" in no_command.stderr
    assert not os.path.exists(marker)


def test_the_watchs_own_log_records_stay_off_the_commands_stderr():
    """watchdog logs a race of its own when the observer stops (CI saw it end a run's stderr, after the
    command's last line): with no logging configured, as in ``rootguard run``, it is not printed."""
    script = ("import logging, lsp_bridge.sandbox.watch; "
              "logging.getLogger('watchdog.observers.inotify').error("
              "'InotifyEmitter.queue_events() called when the thread is inactive')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
