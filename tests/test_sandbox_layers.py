"""``rootguard run``'s layers, each on its own, through the real command and real bubblewrap.

The system masks (``/etc/shadow``, the host's SSH keys), Landlock where it is the only layer
(the degraded ``--landlock-only`` mode, and a path bubblewrap leaves writable), and the
``.git`` of a repository nested in a writable root. Each attack also runs once without the
protection (plain ``sh``, or bubblewrap with the same mounts but no Landlock shim) and must
succeed there, so a test that passes shows the protection doing the work.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import make_repo

BWRAP = shutil.which("bwrap")
UNSHARE = shutil.which("unshare")
ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli.main"]
pytestmark = pytest.mark.skipif(BWRAP is None or sys.platform != "linux", reason="needs bubblewrap on Linux")

FAKE_SHADOW = "root:$6$FAKE-SHADOW-HASH$x:19000:0:99999:7:::\n"
FAKE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE-HOST-KEY\n-----END OPENSSH PRIVATE KEY-----\n"
# In a private mount namespace: a known /etc/shadow and a host key in /etc/ssh (the machine's own
# are left alone, and may not exist), then COMMAND, which sees them as the host's.
PRIVATE_ETC = textwrap.dedent("""\
    set -e
    fake=$1; shift
    mount --bind "$fake/shadow" /etc/shadow
    mount -t tmpfs tmpfs /etc/ssh
    cp "$fake/ssh_host_ed25519_key" /etc/ssh/ssh_host_ed25519_key
    chmod 600 /etc/ssh/ssh_host_ed25519_key
    exec "$@"
    """)


@pytest.fixture
def project(tmp_path: Path, isolated_user: Path) -> dict:
    """A repository with a nested repository (``vendor/lib``), a narrow root inside it and a
    user rule that lets the command read, not write, one file outside that root."""
    base = Path(os.path.realpath(tmp_path))
    repo = make_repo(base / "repo", {"packages/app/index.ts": "app\n", "shared/config.json": '{"shared": true}\n'})
    nested = make_repo(repo / "vendor" / "lib", {"lib.ts": "lib\n"})
    config = base / "user-config.toml"
    config.write_text(textwrap.dedent(f"""\
        version = 2
        [[paths]]
        id = "shared-config"
        path = "{repo / 'shared' / 'config.json'}"
        policies = {{ read = "allow", write = "deny" }}
        """))
    env = {**os.environ, "ROOTGUARD_CONFIG": str(config)}
    return {"base": base, "repo": repo, "nested": nested, "narrow": repo / "packages" / "app", "env": env}


def run(project: dict, root: Path, script: str, *extra: str, env: dict | None = None,
        prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    argv = [*prefix, *ROOTGUARD, "run", *extra, "--root", str(root), "--", "/bin/sh", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, env=env or project["env"], cwd=str(root), timeout=120)


def plain(script: str, cwd: Path, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The same attack with no sandbox at all."""
    return subprocess.run([*prefix, "/bin/sh", "-c", script], capture_output=True, text=True, cwd=str(cwd), timeout=120)


def mounts_only(project: dict, root: Path, script: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """bubblewrap with the mounts ``rootguard run --print`` shows, without the Landlock shim."""
    printed = run(project, root, script, "--print", prefix=prefix)
    assert printed.returncode == 0, printed.stderr
    argv = shlex.split(printed.stdout.replace("\\\n", " "))
    cut = argv.index("--")
    assert "--ro" in argv[cut:]  # what is left out is the shim
    return subprocess.run([*prefix, *argv[:cut + 1], "/bin/sh", "-c", script], capture_output=True, text=True,
                          cwd="/", timeout=120)


def private_etc(tmp_path: Path) -> tuple[str, ...]:
    """A command prefix that runs COMMAND in a private mount namespace with a known shadow file
    and host key; skips when the machine cannot make one (no unshare, no user namespaces)."""
    if UNSHARE is None or not os.path.isfile("/etc/shadow") or not os.path.isdir("/etc/ssh"):
        pytest.skip("needs unshare(1), /etc/shadow and /etc/ssh")
    fake = tmp_path / "fake-etc"
    fake.mkdir()
    (fake / "shadow").write_text(FAKE_SHADOW)
    (fake / "ssh_host_ed25519_key").write_text(FAKE_KEY)
    script = tmp_path / "private-etc.sh"
    script.write_text(PRIVATE_ETC)
    user = () if os.geteuid() == 0 else ("--map-root-user",)
    prefix = (UNSHARE, "--mount", "--propagation", "private", *user, "/bin/sh", str(script), str(fake))
    probe = subprocess.run([*prefix, "/bin/cat", "/etc/shadow"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace here: {probe.stderr.strip()}")
    return prefix


def test_shadow_passwords_and_host_keys_are_not_readable_inside(project, tmp_path):
    prefix = private_etc(tmp_path)
    script = "cat /etc/shadow 2>&1; cat /etc/ssh/ssh_host_ed25519_key 2>&1; true"
    # Without the sandbox the command reads both (the attack works).
    bare = plain(script, project["narrow"], prefix)
    assert "FAKE-SHADOW-HASH" in bare.stdout and "FAKE-HOST-KEY" in bare.stdout, bare.stdout + bare.stderr
    inside = run(project, project["narrow"], script, prefix=prefix)
    assert inside.returncode == 0, inside.stderr
    assert "FAKE-SHADOW-HASH" not in inside.stdout and "FAKE-HOST-KEY" not in inside.stdout, inside.stdout
    # ... and without the Landlock shim, the masks alone hold (they are what does it).
    masks_only = mounts_only(project, project["narrow"], script, prefix)
    assert masks_only.returncode == 0, masks_only.stderr
    assert "FAKE-SHADOW-HASH" not in masks_only.stdout and "FAKE-HOST-KEY" not in masks_only.stdout, masks_only.stdout


def test_landlock_alone_refuses_a_write_to_a_file_granted_read_only(project):
    """The degraded mode (no bubblewrap): Landlock is the only layer, and the rule's file outside
    the root is readable, not writable."""
    from lsp_bridge.sandbox.landlock import abi

    if abi() <= 0:
        pytest.skip("no Landlock in this kernel")
    shared = project["repo"] / "shared" / "config.json"
    before = shared.read_text()
    script = f"/usr/bin/head -1 {shared}; {{ echo '\"written\"' >> {shared}; }} 2>&1; echo own > own.txt && echo own-ok"
    try:
        bare = plain(script, project["narrow"])
        assert bare.returncode == 0 and '"written"' in shared.read_text()  # the attack works unconfined
    finally:
        shared.write_text(before)
        (project["narrow"] / "own.txt").unlink(missing_ok=True)
    env = {**project["env"], "PATH": "/nonexistent"}  # no bubblewrap on PATH: Landlock alone
    result = run(project, project["narrow"], script, "--landlock-only", env=env)
    assert result.returncode == 0, result.stderr
    assert "DEGRADED MODE" in result.stderr
    assert '{"shared": true}' in result.stdout and "Permission denied" in result.stdout and "own-ok" in result.stdout
    assert shared.read_text() == before


def test_landlock_refuses_a_write_that_bubblewraps_mounts_allow(project):
    """/proc is mounted writable by bubblewrap (a process may rename itself through
    ``/proc/<pid>/comm``); the Landlock shim grants it read only, so there the shim alone refuses."""
    from lsp_bridge.sandbox.landlock import abi

    if abi() <= 0:
        pytest.skip("no Landlock in this kernel")
    script = "{ printf renamed > /proc/$$/comm; } 2>&1; cat /proc/$$/comm"
    inside = run(project, project["narrow"], script)
    assert inside.returncode == 0, inside.stderr
    assert "Permission denied" in inside.stdout and "renamed" not in inside.stdout, inside.stdout
    # The same mounts without the shim: bubblewrap alone lets the write through.
    without = mounts_only(project, project["narrow"], script)
    assert without.returncode == 0, without.stderr
    assert "renamed" in without.stdout and "Permission denied" not in without.stdout


def test_the_git_directory_of_a_nested_repository_in_a_writable_root_is_read_only(project):
    repo, nested = project["repo"], project["nested"]
    git_dir = nested / ".git"
    config_before = (git_dir / "config").read_text()
    script = "; ".join([
        f"touch {git_dir}/poison 2>&1",
        f"{{ echo '[core]' >> {git_dir}/config; }} 2>&1",
        f"{{ echo '#!/bin/sh' > {git_dir}/hooks/post-checkout; }} 2>&1",
        f"echo ok > {nested}/new.ts && echo tree-write-ok",
        "true",
    ])
    try:
        bare = plain(script, repo)  # unconfined, every write lands
        assert (git_dir / "poison").exists() and (git_dir / "hooks" / "post-checkout").exists(), bare.stdout
    finally:
        (git_dir / "poison").unlink(missing_ok=True)
        (git_dir / "hooks" / "post-checkout").unlink(missing_ok=True)
        (git_dir / "config").write_text(config_before)
        (nested / "new.ts").unlink(missing_ok=True)
    result = run(project, repo, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Read-only file system") == 3, result.stdout
    assert "tree-write-ok" in result.stdout  # the nested repository's files stay writable
    assert not (git_dir / "poison").exists() and not (git_dir / "hooks" / "post-checkout").exists()
    assert (git_dir / "config").read_text() == config_before
    (nested / "new.ts").unlink(missing_ok=True)
