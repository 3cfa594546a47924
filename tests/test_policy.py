"""The decision engine, one test per rule of seed 001, through real files and configs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from lsp_bridge.core.session import open_session
from tests.conftest import git, make_repo


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def decide(folders, op, path, dest=None, env=None):
    session = open_session([str(f) for f in folders], env=env if env is not None else os.environ)
    return session.policy.decide(op, str(path), None if dest is None else str(dest))


def user_config(home: Path, text: str) -> Path:
    path = home / ".config" / "rootguard" / "config.toml"
    write(path, text)
    return path


@pytest.fixture
def repo(tmp_path):
    root = make_repo(tmp_path / "shop", {"package.json": "{}\n", "packages/checkout/package.json": "{}\n"})
    write(root / "packages/checkout/src/index.ts")
    write(root / "packages/payments/src/pay.ts")
    write(root / ".env", "SECRET=1\n")
    return root


# --- Resolution rules -------------------------------------------------------


def test_no_rule_allows_inside_the_baseline_and_denies_outside(repo):
    narrow = repo / "packages/checkout"
    assert decide([narrow], "read", narrow / "src/index.ts").decision == "allow"
    outside = decide([narrow], "read", repo / "packages/payments/src/pay.ts")
    assert outside.decision == "deny"
    assert "outside every root" in outside.reason


def test_server_side_rules_are_authoritative_over_the_baseline(repo, isolated_user):
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "no-secrets"\npath = "{repo}"\nincludes = [".env*"]\n'
        'policies = { read = "deny", write = "deny" }\n'
        f'[[paths]]\nid = "payments"\npath = "{repo}/packages/payments"\npolicies = {{ read = "allow" }}\n',
    )
    inside = decide([repo], "read", repo / ".env")
    assert (inside.decision, inside.rule) == ("deny", "no-secrets")
    widened = decide([repo / "packages/checkout"], "read", repo / "packages/payments/src/pay.ts")
    assert (widened.decision, widened.rule) == ("allow", "payments")


def test_exact_file_rule_outranks_a_directory_rule(repo, isolated_user):
    """Through real configuration files: the file rule decides the file only."""
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "repo-read"\npath = "{repo}"\npolicies = {{ read = "allow" }}\n'
        f'[[paths]]\nid = "env-file"\npath = "{repo}/.env"\npolicies = {{ read = "deny" }}\n',
    )
    assert decide([repo], "read", repo / ".env").rule == "env-file"
    assert decide([repo], "read", repo / ".env").decision == "deny"
    assert decide([repo], "read", repo / "package.json").rule == "repo-read"


def test_the_exact_file_tier_beats_equal_depth_and_strictness(tmp_path):
    """Two rules anchored on the same path, one known as a file: the file rule wins.

    Depth and literal prefix tie, so without the exact-file tier the stricter
    rule (deny) would win; the anchor does not even exist on disk, since rule
    compilation reads nothing (the file fact was resolved when loading).
    """
    from lsp_bridge.core.rules import RuleSet
    from lsp_bridge.core.scope import build_scope
    from lsp_bridge.core.settings import Config, PathRule

    folder = tmp_path / "app"
    folder.mkdir()
    anchor = str(folder / "secrets.toml")  # never created
    config = Config(
        paths=(
            PathRule(id="as-directory", path=anchor, anchor=anchor, read="deny"),
            PathRule(id="as-file", path=anchor, anchor=anchor, read="allow", is_file=True),
        )
    )
    rules = RuleSet(config, build_scope([str(folder)], config))
    compiled, verdict = rules.winner(anchor, "read")
    assert (compiled.rule.id, verdict) == ("as-file", "allow")
    assert not os.path.lexists(anchor)


def test_deepest_anchor_wins(repo, isolated_user):
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "repo"\npath = "{repo}"\npolicies = {{ write = "deny" }}\n'
        f'[[paths]]\nid = "checkout"\npath = "{repo}/packages/checkout"\npolicies = {{ write = "allow" }}\n',
    )
    assert decide([repo], "write", repo / "packages/checkout/src/index.ts").rule == "checkout"
    assert decide([repo], "write", repo / "packages/checkout/src/index.ts").decision == "allow"
    assert decide([repo], "write", repo / "packages/payments/src/pay.ts").decision == "deny"


def test_longest_literal_include_prefix_wins_at_equal_depth(repo, isolated_user):
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "all"\npath = "{repo}/packages/checkout"\nincludes = ["**/*"]\n'
        'policies = { write = "deny" }\n'
        f'[[paths]]\nid = "src"\npath = "{repo}/packages/checkout"\nincludes = ["src/**"]\n'
        'policies = { write = "allow" }\n',
    )
    narrow = repo / "packages/checkout"
    assert decide([narrow], "write", narrow / "src/index.ts").rule == "src"
    assert decide([narrow], "write", narrow / "package.json").decision == "deny"


@pytest.mark.parametrize(
    "verdicts, expected",
    [(("allow", "request"), "request"), (("allow", "deny"), "deny"), (("request", "deny", "allow"), "deny")],
)
def test_equal_specificity_resolves_deny_then_request_then_allow(repo, isolated_user, verdicts, expected):
    rules = "".join(
        f'[[paths]]\nid = "r{i}"\npath = "{repo}"\npolicies = {{ read = "{v}" }}\n' for i, v in enumerate(verdicts)
    )
    user_config(isolated_user, "version = 2\n" + rules)
    assert decide([repo], "read", repo / "package.json").decision == expected


def test_exclusions_override_includes_inside_a_rule(tmp_path, isolated_user):
    outside = tmp_path / "shared-config"
    write(outside / "tsconfig.base.json")
    write(outside / ".env.local")
    folder = tmp_path / "work"
    folder.mkdir()
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "shared"\npath = "{outside}"\nincludes = ["**/*"]\nexcludes = [".env*"]\n'
        'policies = { read = "allow" }\n',
    )
    assert decide([folder], "read", outside / "tsconfig.base.json").decision == "allow"
    excluded = decide([folder], "read", outside / ".env.local")
    assert (excluded.decision, excluded.rule) == ("deny", None)


@pytest.mark.parametrize("write_verdict", ["deny", "request", "allow"])
def test_delete_inherits_write_when_omitted(repo, isolated_user, write_verdict):
    user_config(
        isolated_user, f'version = 2\n[[paths]]\nid = "w"\npath = "{repo}"\npolicies = {{ write = "{write_verdict}" }}\n'
    )
    assert decide([repo], "delete", repo / "package.json").decision == write_verdict


def test_project_allow_beyond_the_baseline_is_reduced_to_request(repo, isolated_user):
    store = repo / "node_modules/.pnpm/react@18.3.1/node_modules/react"
    write(store / "index.js")
    narrow = repo / "packages/checkout"
    write(narrow / ".rootguard.toml", 'version = 2\n[[paths]]\nid = "pnpm-store"\npath = "../../node_modules/.pnpm"\n'
          'policies = { read = "allow", write = "deny" }\n')
    from_project = decide([narrow], "read", store / "index.js")
    assert (from_project.decision, from_project.rule) == ("request", "pnpm-store")
    assert "project file cannot allow beyond the host baseline" in from_project.reason
    (narrow / ".rootguard.toml").unlink()  # the project file inside the root goes, with its write = deny:
    user_config(isolated_user, f'version = 2\n[[paths]]\nid = "pnpm-store"\npath = "{repo}/node_modules/.pnpm"\n'
                'policies = { read = "allow", write = "deny" }\n')
    session = open_session([str(narrow)])
    assert session.held()  # an agent could have deleted it: held until the person approves
    assert session.policy.decide("read", str(store / "index.js")).decision == "request"
    assert session.accept_held()
    assert session.policy.decide("read", str(store / "index.js")).decision == "allow"
    assert decide([narrow], "read", store / "index.js").decision == "allow"  # approved: recorded for next time


def test_project_allow_inside_the_baseline_stays_allow(repo):
    write(repo / ".rootguard.toml", 'version = 2\n[[paths]]\nid = "docs"\npath = "docs"\npolicies = { write = "allow" }\n')
    write(repo / "docs/a.md")
    assert decide([repo], "write", repo / "docs/a.md").decision == "allow"


def test_version_2_never_allows_the_temp_directory(tmp_path, isolated_user):
    folder = tmp_path / "project"
    folder.mkdir()
    scratch = Path(tempfile.mkdtemp(prefix="rootguard-scratch-"))
    try:
        write(scratch / "note.txt")
        user_config(isolated_user, "version = 2\n")
        assert decide([folder], "read", scratch / "note.txt").decision == "deny"
        user_config(isolated_user, "# version 1: no version key\n[safety]\nallow_any_path = false\n")
        assert decide([folder], "read", scratch / "note.txt").decision == "allow"  # v1 meaning kept
        user_config(isolated_user, "[safety]\nallow_temp_directory = false\n")
        assert decide([folder], "read", scratch / "note.txt").decision == "deny"
    finally:
        for child in scratch.iterdir():
            child.unlink()
        scratch.rmdir()


def test_version_1_booleans_load_with_one_deprecation_each(tmp_path, isolated_user):
    user_config(isolated_user, "[safety]\nallow_temp_directory = false\nfollow_symlinks = true\n")
    session = open_session([str(tmp_path)])
    deprecated = [d for d in session.diagnostics if d.code == "deprecated-v1-boolean"]
    assert len(deprecated) == 2
    assert all("deprecated" in d.tags for d in deprecated)


@pytest.mark.parametrize(
    "op, needs", [("read", "read"), ("write", "write"), ("metadata", "write"), ("delete", "delete")]
)
def test_operations_need_their_permission(repo, isolated_user, op, needs):
    policies = {"read": "allow", "write": "allow", "delete": "allow"}
    policies[needs] = "deny"
    table = ", ".join(f'{k} = "{v}"' for k, v in policies.items())
    user_config(isolated_user, f'version = 2\n[[paths]]\nid = "p"\npath = "{repo}"\npolicies = {{ {table} }}\n')
    assert decide([repo], op, repo / "package.json").decision == "deny"


def test_rename_needs_delete_on_source_and_write_on_destination(repo, isolated_user):
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "src-keep"\npath = "{repo}/packages/checkout/src"\n'
        'policies = { write = "allow", delete = "deny" }\n'
        f'[[paths]]\nid = "ro-docs"\npath = "{repo}/docs"\npolicies = {{ write = "deny" }}\n',
    )
    src = repo / "packages/checkout/src/index.ts"
    assert decide([repo], "rename", src, repo / "moved.ts").decision == "deny"
    assert decide([repo], "rename", repo / "package.json", repo / "docs/package.json").decision == "deny"
    ok = decide([repo], "rename", repo / "package.json", repo / "pkg.json")
    assert ok.decision == "allow" and ok.dest.path == str(repo / "pkg.json")


def test_a_rename_into_view_needs_read_on_the_source(repo, isolated_user):
    """A file the agent may not read cannot be renamed to a name it may read; renaming it to
    another unreadable name only needs delete and write."""
    write(repo / "vault/key.txt", "KEY\n")
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "vault"\npath = "{repo}/vault"\n'
        'policies = { read = "deny", write = "allow", delete = "allow" }\n',
    )
    into_view = decide([repo], "rename", repo / "vault/key.txt", repo / "key.txt")
    assert (into_view.decision, into_view.rule) == ("deny", "vault")
    assert "renaming needs read on the source" in into_view.reason
    kept_dark = decide([repo], "rename", repo / "vault/key.txt", repo / "vault/key2.txt")
    assert kept_dark.decision == "allow"


@pytest.mark.parametrize(("project_policy", "user_policy", "path", "expected"), [
    # A user deny on every .env; the project allows its whole config directory (a deeper anchor).
    ('read = "allow", write = "allow"', ('includes = ["**/.env"]', 'read = "deny", write = "deny"'),
     "config/.env", ("deny", "u-env")),
    ('read = "allow", write = "allow"', ('includes = ["**/.env"]', 'read = "deny", write = "deny"'),
     "config/app.json", ("allow", "p-config")),
    # A user request on the whole repository; the project allows a directory by a glob.
    ('read = "allow"', ("", 'read = "request"'), "config/app.json", ("request", "u-repo")),
])
def test_the_user_file_is_a_floor_for_a_directory_project_rule(tmp_path, isolated_user, project_policy,
                                                               user_policy, path, expected):
    """A project rule more specific than a user rule cannot make a decision looser than the
    user's (PRODUCT.md "Layering"), whether it is anchored deeper or matches by a glob."""
    repo = make_repo(tmp_path / "repo", {"config/.env": "S=1\n", "config/app.json": "{}\n"})
    includes, policies = user_policy
    rule_id = "u-env" if includes else "u-repo"
    user_config(isolated_user, f'version = 2\n[[paths]]\nid = "{rule_id}"\npath = "{repo}"\n{includes}\n'
                               f"policies = {{ {policies} }}\n")
    project = ('[[paths]]\nid = "p-config"\npath = "config"\n' if includes
               else '[[paths]]\nid = "p-config"\npath = "."\nincludes = ["config/**"]\n')
    write(repo / ".rootguard.toml", f"version = 2\n{project}policies = {{ {project_policy} }}\n")
    decided = decide([repo], "read", repo / path)
    assert (decided.decision, decided.rule) == expected
    if expected[0] == "deny":
        assert decide([repo], "write", repo / path).decision == "deny"


def test_symlink_needs_both_ends_and_follow_symlinks_on_its_rule(repo, isolated_user):
    narrow = repo / "packages/checkout"
    link = narrow / "src/link.ts"
    link.symlink_to(narrow / "src/index.ts")
    rule = f'version = 2\n[[paths]]\nid = "src"\npath = "{narrow}/src"\npolicies = {{ read = "allow" }}\n'
    user_config(isolated_user, rule + "follow_symlinks = false\n")
    refused = decide([narrow], "read", link)
    assert refused.decision == "deny" and "follow_symlinks" in refused.reason
    user_config(isolated_user, rule + "follow_symlinks = true\n")
    assert decide([narrow], "read", link).decision == "allow"
    escape = narrow / "src/escape.ts"
    escape.symlink_to(repo / "packages/payments/src/pay.ts")
    assert decide([narrow], "read", escape).decision == "deny"


def test_baseline_links_inside_the_baseline_are_followed(repo):
    narrow = repo / "packages/checkout"
    (narrow / "alias.ts").symlink_to("src/index.ts")
    assert decide([narrow], "read", narrow / "alias.ts").decision == "allow"


def test_active_config_files_are_protected_targets(repo, isolated_user):
    write(repo / ".rootguard.toml", "version = 2\n")
    assert decide([repo], "read", repo / ".rootguard.toml").decision == "allow"
    assert decide([repo], "write", repo / ".rootguard.toml").decision == "request"
    assert decide([repo], "delete", repo / ".rootguard.toml").decision == "request"
    user_file = repo / "user-rootguard.toml"
    write(user_file, "version = 2\n")
    env = dict(os.environ, ROOTGUARD_CONFIG=str(user_file))
    assert decide([repo], "write", user_file, env=env).decision == "request"


def test_a_batch_is_decided_whole_before_any_side_effect(repo, isolated_user):
    user_config(
        isolated_user, f'version = 2\n[[paths]]\nid = "ro"\npath = "{repo}/packages/payments"\npolicies = {{ write = "deny" }}\n'
    )
    session = open_session([str(repo)])
    batch = session.policy.decide_batch(
        [("write", str(repo / "package.json")), ("write", str(repo / "packages/payments/src/pay.ts"))]
    )
    assert batch.decision == "deny"
    assert [d.decision for d in batch.items] == ["allow", "deny"]
    assert session.policy.decide_batch([("write", str(repo / "package.json"))]).decision == "allow"


def test_a_batch_takes_session_grants_for_exactly_the_need_and_path_granted(repo, isolated_user):
    user_config(
        isolated_user,
        f'version = 2\n[[paths]]\nid = "ask"\npath = "{repo}/packages/payments"\npolicies = {{ write = "request" }}\n'
        f'[[paths]]\nid = "ro"\npath = "{repo}/packages/ledger"\npolicies = {{ write = "deny" }}\n',
    )
    policy = open_session([str(repo)]).policy
    pay = str(repo / "packages/payments/src/pay.ts")
    items = [("write", str(repo / "package.json")), (("read", "write"), pay)]
    asked = policy.decide_batch(items)
    assert (asked.decision, asked.culprit, asked.pending[0].rule) == ("request", 1, "ask")
    granted = policy.decide_batch(items, granted={("write", pay)})
    assert granted.decision == "allow" and granted.results[1].granted
    assert granted.results[1].reason.startswith("allowed for this session earlier")
    assert policy.decide_batch(items, granted={("read", pay)}).decision == "request"  # another need
    denied = policy.decide_batch([("write", str(repo / "packages/ledger/x.ts"))],
                                 granted={("write", str(repo / "packages/ledger/x.ts"))})
    assert denied.decision == "deny"  # a grant never lifts a deny


# --- Multiple workspaces ------------------------------------------------------


@pytest.fixture
def two_projects(tmp_path):
    a = make_repo(tmp_path / "alpha", {"a.txt": "a\n"})
    b = make_repo(tmp_path / "beta", {"b.txt": "b\n"})
    write(b / ".rootguard.toml", 'version = 2\n[[paths]]\nid = "beta-ro"\npath = "."\npolicies = { write = "deny" }\n')
    return a, b


def test_absolute_path_selects_the_root_that_contains_it(two_projects):
    a, b = two_projects
    decision = decide([a, b], "write", b / "b.txt")
    assert (decision.decision, decision.rule, decision.root) == ("deny", "beta-ro", str(b))
    assert decide([a, b], "write", a / "a.txt").decision == "allow"


def test_relative_path_uses_the_first_root(two_projects):
    a, b = two_projects
    write(a / "b.txt")
    decision = decide([a, b], "write", "b.txt")
    assert (decision.path, decision.decision) == (str(a / "b.txt"), "allow")
    assert decide([b, a], "write", "b.txt").decision == "deny"


def test_a_call_spanning_roots_with_different_policies_fails(two_projects):
    a, b = two_projects
    session = open_session([str(a), str(b)])
    moved = session.policy.decide("rename", str(a / "a.txt"), str(b / "a.txt"))
    assert moved.decision == "deny" and "spans roots whose policies differ" in moved.reason
    batch = session.policy.decide_batch([("read", str(a / "a.txt")), ("read", str(b / "b.txt"))])
    assert batch.decision == "deny"


def test_a_call_spanning_roots_with_the_same_policy_is_fine(tmp_path):
    a = make_repo(tmp_path / "alpha")
    b = make_repo(tmp_path / "beta")
    assert decide([a, b], "rename", a / "README.md", b / "moved.md").decision == "allow"


# --- Linked git worktrees -------------------------------------------------------


@pytest.fixture
def worktree_repo(tmp_path):
    main = make_repo(tmp_path / "main", {"packages/checkout/index.ts": "x\n", "docs/a.md": "a\n"})
    git(main, "worktree", "add", "-q", str(tmp_path / "hotfix"), "-b", "hotfix")
    return main, tmp_path / "hotfix"


def test_included_worktrees_join_the_baseline_at_the_same_offset(worktree_repo):
    main, hotfix = worktree_repo
    session = open_session([str(main / "packages/checkout")])
    assert str(hotfix / "packages/checkout") in session.scope.union.paths
    assert session.policy.decide("read", str(hotfix / "packages/checkout/index.ts")).decision == "allow"
    assert session.policy.decide("read", str(hotfix / "docs/a.md")).decision == "deny"


def test_relative_anchors_remap_onto_each_worktree(worktree_repo):
    main, hotfix = worktree_repo
    write(main / ".rootguard.toml", 'version = 2\n[[paths]]\nid = "docs-ro"\npath = "docs"\npolicies = { write = "deny" }\n')
    decision = decide([main], "write", hotfix / "docs/a.md")
    assert (decision.decision, decision.rule) == ("deny", "docs-ro")


def test_request_mode_makes_sibling_worktree_access_wait_for_approval(worktree_repo):
    main, hotfix = worktree_repo
    write(main / ".rootguard.toml", 'version = 2\n[workspace]\nworktrees = "request"\n'
          '[[paths]]\nid = "docs-ro"\npath = "docs"\npolicies = { write = "deny" }\n')
    assert decide([main], "read", hotfix / "packages/checkout/index.ts").decision == "request"
    assert decide([main], "write", hotfix / "docs/a.md").decision == "deny"  # explicit deny stays
    assert decide([main], "read", main / "docs/a.md").decision == "allow"


def test_ignore_mode_leaves_sibling_worktrees_outside(worktree_repo, isolated_user):
    main, hotfix = worktree_repo
    write(main / ".rootguard.toml", 'version = 2\n[workspace]\nworktrees = "ignore"\n')
    assert decide([main], "read", hotfix / "docs/a.md").decision == "deny"
    user_config(isolated_user, f'version = 2\n[[paths]]\nid = "hotfix"\npath = "{hotfix}"\npolicies = {{ read = "allow" }}\n')
    assert decide([main], "read", hotfix / "docs/a.md").decision == "allow"


# --- Boundary cases ---------------------------------------------------------------


def test_an_all_invalid_roots_update_yields_an_empty_union(tmp_path):
    session = open_session([str(tmp_path)])
    assert session.policy.decide("read", str(tmp_path)).decision == "allow"
    session.set_folders([str(tmp_path / "gone"), "relative/path"])
    assert session.scope.union.paths == ()
    assert session.policy.decide("read", str(tmp_path)).decision == "deny"
    assert any(d.code == "invalid-root" for d in session.diagnostics)


def test_rootguard_roots_with_only_invalid_entries_denies(tmp_path):
    env = dict(os.environ, ROOTGUARD_ROOTS=os.pathsep.join(["relative", str(tmp_path / "missing")]))
    assert decide([tmp_path], "read", tmp_path, env=env).decision == "deny"


def test_hostile_gitdir_widens_nothing(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / ".git").write_text("gitdir: /\n")
    session = open_session([str(folder)])
    assert session.scope.union.paths == (str(folder),)
    assert session.scope.worktrees == ()
    assert any(d.file is None or "evil" in (d.file or "") or "gitdir" in d.message for d in session.diagnostics)


def test_prefix_sibling_is_outside_cve_2025_53110(tmp_path):
    allowed = tmp_path / "private/tmp/allowed_dir"
    secret = write(tmp_path / "private/tmp/allowed_dir_sensitive_credentials/creds.txt")
    allowed.mkdir(parents=True)
    assert decide([allowed], "read", secret).decision == "deny"
    assert decide([allowed], "read", str(allowed) + "/../allowed_dir_sensitive_credentials/creds.txt").decision == "deny"


def test_symlink_escapes_are_denied_cve_2025_53109(tmp_path):
    root = tmp_path / "root"
    outside = write(tmp_path / "outside/secret.txt")
    (root / "dir").mkdir(parents=True)
    (root / "file-link").symlink_to(outside)
    (root / "dir-link").symlink_to(outside.parent)
    (root / "dangling").symlink_to(tmp_path / "outside/not-yet.txt")
    for path in (root / "file-link", root / "dir-link/secret.txt", root / "dangling"):
        decision = decide([root], "read", path)
        assert decision.decision == "deny", path
        assert decision.path.startswith(str(tmp_path / "outside"))
    assert decide([root], "write", root / "dangling").decision == "deny"


def test_a_version_1_project_file_cannot_widen_to_the_temp_directory(tmp_path):
    folder = make_repo(tmp_path / "cloned")
    write(folder / ".rootguard.toml", "# a legacy project file\n[safety]\nallow_any_path = true\n")
    scratch = Path(tempfile.mkdtemp(prefix="rootguard-scratch-"))
    try:
        write(scratch / "note.txt")
        session = open_session([str(folder)])
        assert session.scope.union.paths == (str(folder),)
        decision = session.policy.decide("read", str(scratch / "note.txt"))
        assert decision.decision == "request" and "cannot widen" in decision.reason
    finally:
        (scratch / "note.txt").unlink()
        scratch.rmdir()


def test_dotdot_after_a_symlink_climbs_from_the_target_like_the_kernel(tmp_path):
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    write(root / "inside.txt")
    outside = tmp_path / "outside"
    write(outside / "secret.txt")
    (outside / "dir").mkdir()
    (root / "link").symlink_to(outside / "dir")
    # Lexically root/link/../secret.txt is root/secret.txt; the kernel opens outside/secret.txt.
    decision = decide([root], "read", f"{root}/link/../secret.txt")
    assert decision.decision == "deny" and decision.path == str(outside / "secret.txt")
    assert decide([root], "read", f"{root}/src/../inside.txt").decision == "allow"
