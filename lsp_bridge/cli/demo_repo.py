"""A pnpm-style monorepo like the one in seed 000, built on disk for tests and benches.

``build_monorepo`` makes the small one (a few thousand files, real ``git``
commits, a linked worktree); ``build_large_monorepo`` makes the ~61,000-file one
quickly (bulk writes, history through ``git fast-import``). Every secret is fake
but shaped to be detected, and is assembled at run time so this source file
holds no string a secret scanner would flag. Content is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field

from lsp_bridge.core.git import git_env

REPO_NAME = "shop"
WORKTREE_NAME = "shop-hotfix"
DELETED_SECRET = ".env.production"
DEPLOY_ROLE = "arn:aws:iam::123456789012:role/deploy"
STORE_PACKAGES = (
    ("react", "18.3.1"), ("react-dom", "18.3.1"), ("zod", "3.23.8"),
    ("scheduler", "0.23.2"), ("loose-envify", "1.4.0"),
)
PACKAGE_NAMES = (
    "checkout", "ui", "payments", "cart", "catalog", "search", "auth", "accounts",
    "orders", "inventory", "shipping", "pricing", "promotions", "reviews",
    "notifications", "analytics", "admin", "cms", "i18n", "config", "logger",
    "api-client", "design-tokens", "icons", "forms", "hooks", "utils", "testing",
    "storybook", "emails",
)
_FILES_PER_DIR = 20
_EPOCH = 1_700_000_000


@dataclass(frozen=True)
class DemoRepo:
    """Where everything in the demo monorepo is (all absolute, canonical)."""

    root: str  # the directory given to the builder
    repo: str  # <root>/shop, the repository root
    narrow: str  # packages/checkout
    env_file: str
    tfvars: str
    workflow: str
    store: str  # node_modules/.pnpm
    react_link: str  # packages/checkout/node_modules/react
    ui_link: str  # packages/checkout/node_modules/@shop/ui
    packages: tuple[str, ...]  # every packages/<name> directory
    worktree: str | None
    commits: int
    deleted_secret: str = DELETED_SECRET
    deploy_role: str = DEPLOY_ROLE
    env_credentials: int = 4
    tfvars_credentials: int = 6
    fake_secrets: tuple[str, ...] = field(default=(), repr=False)

    def package(self, name: str) -> str:
        return os.path.join(self.repo, "packages", name)


# ---------------------------------------------------------------- fake secrets


def _fake(label: str, length: int, alphabet: str = "0123456789abcdef") -> str:
    """A deterministic pseudo-random string over ``alphabet``."""
    out: list[str] = []
    counter = 0
    while len(out) < length:
        digest = hashlib.sha256(f"{label}:{counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:length])


_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _secrets() -> dict[str, str]:
    live = "_".join(("live", ""))  # keeps key prefixes out of this file's text
    return {
        "pg_password": _fake("pg", 20, _ALNUM),
        "stripe_restricted": "rk_" + live + _fake("stripe-rk", 32, _ALNUM),
        "segment": _fake("segment", 32, _ALNUM),
        "sentry": _fake("sentry", 32),
        "tf_db_password": _fake("tf-db", 24, _ALNUM),
        "tf_stripe": "sk_" + live + _fake("stripe-sk", 32, _ALNUM),
        "tf_datadog": _fake("datadog", 32),
        "tf_github": "gh" + "p_" + _fake("github", 36, _ALNUM),
        "tf_jwt": _fake("jwt", 48, _ALNUM),
        "tf_redis": _fake("redis", 32, _ALNUM),
        "old_pg_password": _fake("old-pg", 20, _ALNUM),
        "old_stripe": "sk_" + live + _fake("old-stripe", 32, _ALNUM),
    }


def _env_text(s: dict[str, str]) -> str:
    """Eleven variables, four of them credentials."""
    return "\n".join([
        "NODE_ENV=production",
        "PORT=3000",
        "LOG_LEVEL=info",
        "FEATURE_FLAG_NEW_CHECKOUT=true",
        "API_BASE_URL=https://api.shop.example",
        "PUBLIC_ASSET_HOST=https://cdn.shop.example",
        "TZ=UTC",
        f"DATABASE_URL=postgres://shop_app:{s['pg_password']}@staging-replica.db.internal:5432/shop",
        f"STRIPE_RESTRICTED_KEY={s['stripe_restricted']}",
        f"SEGMENT_WRITE_KEY={s['segment']}",
        f"SENTRY_DSN=https://{s['sentry']}@o123.ingest.sentry.io/456",
    ]) + "\n"


def _tfvars_text(s: dict[str, str]) -> str:
    """Six secrets among ordinary variables."""
    return "\n".join([
        'region             = "eu-west-1"',
        'environment        = "production"',
        'instance_type      = "m6i.large"',
        "replica_count      = 3",
        "enable_auth        = true",
        "token_ttl_seconds  = 3600",
        'ssh_public_key     = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDemoDemoDemo deploy@shop"',
        f'db_password        = "{s["tf_db_password"]}"',
        f'stripe_secret_key  = "{s["tf_stripe"]}"',
        f'datadog_api_key    = "{s["tf_datadog"]}"',
        f'github_token       = "{s["tf_github"]}"',
        f'jwt_signing_secret = "{s["tf_jwt"]}"',
        f'redis_auth_token   = "{s["tf_redis"]}"',
    ]) + "\n"


def _deleted_env_text(s: dict[str, str]) -> str:
    return (
        f"DATABASE_URL=postgres://shop_app:{s['old_pg_password']}@prod-primary.db.internal/shop\n"
        f"STRIPE_SECRET_KEY={s['old_stripe']}\n"
    )


# ---------------------------------------------------------------- tracked files


def _package_names(count: int) -> list[str]:
    names = list(PACKAGE_NAMES[:count])
    names += [f"pkg-{i:02d}" for i in range(len(names), count)]
    return names


def _package_files(name: str, total: int) -> dict[str, str]:
    """``total`` files for packages/<name>: package.json, tsconfig.json, sources."""
    base = f"packages/{name}"
    deps = {"react": "18.3.1", "zod": "3.23.8"}
    if name == "checkout":
        deps["@shop/ui"] = "workspace:*"
    files = {
        f"{base}/package.json": json.dumps(
            {"name": f"@shop/{name}", "version": "1.0.0", "private": True,
             "dependencies": deps}, indent=2) + "\n",
        f"{base}/tsconfig.json": '{\n  "extends": "../../tsconfig.base.json",\n'
                                 '  "include": ["src"]\n}\n',
    }
    for i in range(max(total - 2, 0)):
        folder = f"{base}/src/m{i // _FILES_PER_DIR:03d}"
        files[f"{folder}/f{i % _FILES_PER_DIR:02d}.ts"] = (
            f'export const {name.replace("-", "_")}_{i} = "{name}:{i}";\n'
        )
    return files


def _workspace_files(names: list[str], extra_files: int) -> dict[str, str]:
    """The tracked files above the packages."""
    files = {
        "package.json": json.dumps({"name": "shop", "private": True,
                                    "scripts": {"typecheck": "turbo run typecheck"}},
                                   indent=2) + "\n",
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "tsconfig.base.json": '{\n  "compilerOptions": {"strict": true, "target": "ES2022"}\n}\n',
        "turbo.json": '{\n  "tasks": {"typecheck": {"dependsOn": ["^typecheck"]}}\n}\n',
        ".npmrc": "auto-install-peers=true\nlink-workspace-packages=true\n",
        ".gitignore": "node_modules/\n.env\n.env.*\n*.tfvars\n",
        "README.md": "# shop\n\nA demo pnpm workspace.\n",
        ".github/workflows/deploy.yml": (
            "name: deploy\non:\n  push:\n    branches: [main]\npermissions:\n"
            "  id-token: write\n  contents: read\njobs:\n  deploy:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - uses: actions/checkout@v4\n"
            "      - uses: aws-actions/configure-aws-credentials@v4\n        with:\n"
            f"          role-to-assume: {DEPLOY_ROLE}\n          aws-region: eu-west-1\n"
            "      - run: pnpm turbo run deploy\n"
        ),
        ".github/workflows/ci.yml": (
            "name: ci\non: [pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - uses: actions/checkout@v4\n      - run: pnpm turbo run typecheck\n"
        ),
        "infra/terraform/main.tf": 'provider "aws" {\n  region = var.region\n}\n',
        "infra/terraform/variables.tf": 'variable "region" {}\nvariable "db_password" {\n'
                                        "  sensitive = true\n}\n",
    }
    for i in range(extra_files):
        files[f"docs/d{i // _FILES_PER_DIR:03d}/note{i % _FILES_PER_DIR:02d}.md"] = f"# note {i}\n"
    return files


def _tracked_files(names: list[str], narrow_files: int, per_package: int,
                   extra_files: int) -> dict[str, str]:
    files = _workspace_files(names, extra_files)
    for name in names:
        files.update(_package_files(name, narrow_files if name == "checkout" else per_package))
    return files


# ---------------------------------------------------------------- untracked files


def _store_files(files_per_package: int) -> dict[str, str]:
    """node_modules/.pnpm/<pkg>@<ver>/node_modules/<pkg>/... (the content-addressed store)."""
    files = {"node_modules/.modules.yaml": "layoutVersion: 5\nnodeLinker: isolated\n",
             "node_modules/.pnpm/lock.yaml": "lockfileVersion: '9.0'\n"}
    for pkg, version in STORE_PACKAGES:
        base = f"node_modules/.pnpm/{pkg}@{version}/node_modules/{pkg}"
        files[f"{base}/package.json"] = json.dumps({"name": pkg, "version": version}) + "\n"
        files[f"{base}/index.d.ts"] = f"export declare const {pkg.replace('-', '_')}: unknown;\n"
        for i in range(max(files_per_package - 2, 0)):
            files[f"{base}/cjs/m{i // _FILES_PER_DIR:03d}/part{i % _FILES_PER_DIR:02d}.js"] = (
                f"module.exports = {i};\n"
            )
    return files


def _links(names: list[str]) -> list[tuple[str, str]]:
    """(link path, link text) pairs: each package's node_modules is symlinks only."""
    links = []
    for name in names:
        links.append((f"packages/{name}/node_modules/react",
                      "../../../node_modules/.pnpm/react@18.3.1/node_modules/react"))
        if name == "checkout":
            links.append((f"packages/{name}/node_modules/zod",
                          "../../../node_modules/.pnpm/zod@3.23.8/node_modules/zod"))
            # node_modules/@shop/ui: from packages/checkout/node_modules/@shop, three levels up
            links.append((f"packages/{name}/node_modules/@shop/ui", "../../../ui"))
    return links


def _write_files(root: str, files: dict[str, str]) -> None:
    made: set[str] = set()
    for rel, text in files.items():
        path = os.path.join(root, rel)
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)


def _write_untracked(repo: str, names: list[str], secrets: dict[str, str],
                     store_files_per_package: int) -> None:
    _write_files(repo, {".env": _env_text(secrets),
                        "infra/terraform/prod.tfvars": _tfvars_text(secrets)})
    _write_files(repo, _store_files(store_files_per_package))
    for rel, target in _links(names):
        link = os.path.join(repo, rel)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)


# ---------------------------------------------------------------- git


def _git_env(when: int) -> dict[str, str]:
    return git_env({
        "GIT_AUTHOR_NAME": "Demo Dev", "GIT_AUTHOR_EMAIL": "dev@shop.example",
        "GIT_COMMITTER_NAME": "Demo Dev", "GIT_COMMITTER_EMAIL": "dev@shop.example",
        "GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
    })


def _git(repo: str, *args: str, when: int = _EPOCH, data: bytes | None = None) -> str:
    command = ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false",
               "-c", "core.autocrlf=false", "-C", repo, *args]
    result = subprocess.run(command, input=data, capture_output=True, env=_git_env(when),
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed in {repo}: "
                           f"{result.stderr.decode(errors='replace').strip()}")
    return result.stdout.decode(errors="replace")


def _history_plan(commits: int) -> tuple[int, int]:
    """(commit adding the secrets file, commit deleting it), 1-based."""
    if commits < 3:
        raise ValueError(f"commits must be at least 3 (got {commits})")
    return 2, min(5, commits)


def _change_for(index: int, names: list[str]) -> str:
    """The path a routine commit number ``index`` edits (a CHANGELOG per package)."""
    return f"packages/{names[index % len(names)]}/CHANGELOG.md"


def _commit_all(repo: str, index: int, message: str) -> None:
    _git(repo, "add", "-A", when=_EPOCH + index * 3600)
    _git(repo, "commit", "-q", "--no-verify", "-m", message, when=_EPOCH + index * 3600)


def _make_history(repo: str, names: list[str], commits: int, secrets: dict[str, str]) -> None:
    """``commits`` real commits; one adds .env.production, a later one deletes it."""
    add_at, delete_at = _history_plan(commits)
    _git(repo, "init", "-q")
    _commit_all(repo, 1, "initial workspace")
    changelogs: dict[str, str] = {}
    for index in range(2, commits + 1):
        if index == add_at:
            _write_files(repo, {DELETED_SECRET: _deleted_env_text(secrets)})
            _git(repo, "add", "-f", DELETED_SECRET, when=_EPOCH + index * 3600)
        elif index == delete_at:
            os.remove(os.path.join(repo, DELETED_SECRET))
        else:
            rel = _change_for(index, names)
            changelogs[rel] = changelogs.get(rel, "# changes\n") + f"- change {index}\n"
            _write_files(repo, {rel: changelogs[rel]})
        _commit_all(repo, index, f"change {index}")


# ---------------------------------------------------------------- builders


def build_monorepo(dest: str, *, packages: int = 30, files_per_package: int = 100,
                   narrow_files: int = 340, extra_files: int = 0, commits: int = 12,
                   worktree: bool = True, store_files_per_package: int = 12) -> DemoRepo:
    """Build the seed-000 workspace under ``dest``/shop (and ``dest``/shop-hotfix).

    packages/checkout holds exactly ``narrow_files`` regular files; every other
    package ``files_per_package`` (plus a CHANGELOG.md for those the history edits).
    """
    if packages < 3:
        raise ValueError(f"packages must be at least 3 (checkout, ui, payments); got {packages}")
    if narrow_files < 2:
        raise ValueError(f"narrow_files must be at least 2; got {narrow_files}")
    _history_plan(commits)  # validates commits before anything is written
    root, repo = _fresh_repo(dest)
    names = _package_names(packages)
    secrets = _secrets()
    # Routine commits must not edit the narrow package: keep it at narrow_files.
    edit_names = [n for n in names if n != "checkout"]
    _write_files(repo, _tracked_files(names, narrow_files, files_per_package, extra_files))
    _write_untracked(repo, names, secrets, store_files_per_package)
    _make_history(repo, edit_names, commits, secrets)
    tree = None
    if worktree:
        tree = os.path.join(root, WORKTREE_NAME)
        _git(repo, "worktree", "add", "-q", tree, "-b", "hotfix")
    return _demo(root, repo, names, tree, commits, secrets)


def build_large_monorepo(dest: str, total_files: int = 61_000, commits: int = 300, *,
                         packages: int = 30, narrow_files: int = 340,
                         store_files: int = 4_000) -> DemoRepo:
    """The ~``total_files``-file workspace (store and .git not counted), history via fast-import.

    ``total_files`` counts the regular files an inventory of the repository root
    reports; the store adds ``store_files`` more, reported apart.
    """
    if packages < 3:
        raise ValueError(f"packages must be at least 3; got {packages}")
    _history_plan(commits)
    root, repo = _fresh_repo(dest)
    names = _package_names(packages)
    secrets = _secrets()
    edit_names = [n for n in names if n != "checkout"]
    fixed = len(_workspace_files(names, 0)) + narrow_files + 2  # + .env, prod.tfvars
    fixed += 1  # node_modules/.modules.yaml (outside the store, so it counts)
    changelogs = {_change_for(i, edit_names) for i in range(2, commits + 1)}
    per_package = max((total_files - fixed - len(changelogs)) // (packages - 1), 2)
    extra = max(total_files - fixed - len(changelogs) - per_package * (packages - 1), 0)
    tracked = _tracked_files(names, narrow_files, per_package, extra)
    final = _fast_import_history(repo, tracked, edit_names, commits, secrets)
    _write_files(repo, final)
    per_store_package = max(store_files // len(STORE_PACKAGES), 2)
    _write_untracked(repo, names, secrets, per_store_package)
    _git(repo, "read-tree", "HEAD")
    _git(repo, "update-index", "-q", "--refresh")
    return _demo(root, repo, names, None, commits, secrets)


def _fast_import_history(repo: str, tracked: dict[str, str], names: list[str], commits: int,
                         secrets: dict[str, str]) -> dict[str, str]:
    """Write ``commits`` commits with git fast-import; return the tip's files."""
    add_at, delete_at = _history_plan(commits)
    os.makedirs(repo, exist_ok=True)
    _git(repo, "init", "-q")
    final = dict(tracked)
    chunks: list[bytes] = []
    for index in range(1, commits + 1):
        changes: dict[str, str | None]
        if index == 1:
            changes = dict(tracked)
        elif index == add_at:
            changes = {DELETED_SECRET: _deleted_env_text(secrets)}
        elif index == delete_at:
            changes = {DELETED_SECRET: None}
        else:
            rel = _change_for(index, names)
            final[rel] = final.get(rel, "# changes\n") + f"- change {index}\n"
            changes = {rel: final[rel]}
        chunks.append(_fast_import_commit(index, changes))
    _git(repo, "fast-import", "--quiet", data=b"".join(chunks))
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    return final


def _fast_import_commit(index: int, changes: dict[str, str | None]) -> bytes:
    when = _EPOCH + index * 3600
    message = f"change {index}\n".encode()
    out = [b"commit refs/heads/main\n",
           f"author Demo Dev <dev@shop.example> {when} +0000\n".encode(),
           f"committer Demo Dev <dev@shop.example> {when} +0000\n".encode(),
           b"data %d\n" % len(message), message]
    for rel, text in changes.items():
        if text is None:
            out.append(f"D {rel}\n".encode())
            continue
        body = text.encode()
        out.append(f"M 100644 inline {rel}\n".encode())
        out.append(b"data %d\n" % len(body))
        out.append(body)
        out.append(b"\n")
    out.append(b"\n")
    return b"".join(out)


def _fresh_repo(dest: str) -> tuple[str, str]:
    """(root, repo) for a builder; refuses to build over an existing repository."""
    root = os.path.realpath(dest)
    repo = os.path.join(root, REPO_NAME)
    if os.path.lexists(repo):
        raise FileExistsError(f"{repo} already exists: build the demo in an empty directory")
    return root, repo


def _demo(root: str, repo: str, names: list[str], tree: str | None, commits: int,
          secrets: dict[str, str]) -> DemoRepo:
    narrow = os.path.join(repo, "packages", "checkout")
    return DemoRepo(
        root=root, repo=repo, narrow=narrow,
        env_file=os.path.join(repo, ".env"),
        tfvars=os.path.join(repo, "infra", "terraform", "prod.tfvars"),
        workflow=os.path.join(repo, ".github", "workflows", "deploy.yml"),
        store=os.path.join(repo, "node_modules", ".pnpm"),
        react_link=os.path.join(narrow, "node_modules", "react"),
        ui_link=os.path.join(narrow, "node_modules", "@shop", "ui"),
        packages=tuple(os.path.join(repo, "packages", n) for n in names),
        worktree=tree, commits=commits,
        fake_secrets=tuple(sorted(set(secrets.values()))),
    )
