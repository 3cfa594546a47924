/**
 * Hand-made statuses for the report and command tests: the seed's ~61,000-file
 * example, with values a real recording would not reach. Typed against the
 * generated contract, so they cannot drift from what the server sends; the
 * status bar tests use the recordings in `fixtures.ts`.
 */
import { Status } from '../src/types';

export const NARROW = '/Users/dev/shop/packages/checkout';
export const REPO = '/Users/dev/shop';

export function normalStatus(): Status {
  return {
    version: 1,
    session: 's-1',
    roots: [NARROW],
    union: [NARROW, '/Users/dev/shop-hotfix/packages/checkout'],
    entries: [
      { path: NARROW, origin: 'folder', reason: 'workspace folder' },
      { path: '/Users/dev/shop-hotfix/packages/checkout', origin: 'worktree', reason: 'linked worktree of shop' },
    ],
    shadowed: [],
    worktrees: [{ path: '/Users/dev/shop-hotfix', checkout: '/Users/dev/shop-hotfix', mode: 'include', repository: REPO, locked: false, prunable: false }],
    mounts: null,
    widened: false,
    acknowledged: true,
    withdrawable: false,
    reference: ['/Users/dev/shop/packages/checkout'],
    widening: [],
    inventory: null,
    inventory_pending: false,
    summary: '2 roots (1 folder)',
    widening_lines: [],
    warning_line: '',
    warnings: [],
    approver: 'editor',
    config: { user: '/Users/dev/.config/rootguard/config.toml', project: [] },
  };
}

export function widenedStatus(): Status {
  return {
    version: 1,
    session: 's-1',
    roots: [NARROW, REPO],
    union: [REPO],
    entries: [{ path: REPO, origin: 'folder', reason: 'workspace folder' }],
    shadowed: [{ path: NARROW, by: REPO, origin: 'folder', reason: 'workspace folder' }],
    worktrees: [{ path: '/Users/dev/shop-hotfix', checkout: '/Users/dev/shop-hotfix', mode: 'request', repository: REPO, locked: true, prunable: false }],
    mounts: {
      mounts: [{ source: NARROW, target: '/workspace', mode: 'rw', origin: '.vscode/mcp.json servers.code-index' }],
      roots_without_mount: [REPO],
      mounts_outside_union: [{ source: '/Users/dev/cache', target: '/cache' }],
      suggested: [
        { source: NARROW, target: '/workspace', mode: 'rw', reason: 'workspace folder', beyond_acknowledged: false },
        { source: `${REPO}/node_modules/.pnpm`, target: '/workspace/node_modules/.pnpm', mode: 'ro', reason: 'pnpm store', beyond_acknowledged: true },
      ],
      suggested_for: [NARROW],
      docker_args: ['-v', `${NARROW}:/workspace:rw`, '-v', `${REPO}/node_modules/.pnpm:/workspace/node_modules/.pnpm:ro`, '-v', "/Users/dev/it's here:/x:ro"],
      unrescuable: [],
      first_party: [{ link: `${NARROW}/node_modules/@shop/ui`, target: `${REPO}/packages/ui`, via: 'link' }],
      single_files: [`${REPO}/tsconfig.base.json`],
    },
    widened: true,
    acknowledged: false,
    withdrawable: false,
    reference: ['/Users/dev/shop/packages/checkout'],
    widening: [{ folder: REPO, entry: NARROW, contains: [NARROW], kind: 'ancestor' }],
    inventory: {
      widens: true,
      files_before: 340,
      files_after: 61000,
      ratio: 179.4,
      credentials: [{ path: `${REPO}/.env`, count: 4 }, { path: `${REPO}/infra/prod.tfvars`, count: 6 }],
      git: [{ path: `${REPO}/.git`, bytes: 640 * 1000 * 1000, size: '640.0 MB', commits: 53, deleted_sensitive: ['.env.production'], via: [REPO], renamed_sensitive: [] }],
      siblings: [`${REPO}/packages/ui`, `${REPO}/packages/payments`],
      ci_roles: [{
        path: `${REPO}/.github/workflows/deploy.yml`,
        roles: ['arn:aws:iam::123456789012:role/deploy'],
        identities: [{ cloud: 'aws', kind: 'role', value: 'arn:aws:iam::123456789012:role/deploy' }],
        capped: false,
      }],
      stores: [{ path: `${REPO}/node_modules/.pnpm`, files: 1200 }],
      added_roots: [REPO],
      before: [NARROW],
      after: [REPO],
      errors: [],
      notes: [],
      added_files: [{ path: REPO, files: 60660 }],
    },
    inventory_pending: false,
    summary: '⚠ union ×180: +60,660 files, 2 secrets files, .git (53 commits)',
    widening_lines: [`${REPO} widens ${NARROW}: it contains the narrow root, which no longer limits anything`],
    warning_line: "Root Guard: adding shop widened the agent's boundary ×180: +60,660 files, 2 secrets files, .git (53 commits)",
    warnings: [{ severity: 'warning', code: 'union-widened', message: `${REPO} widened ${NARROW}` }],
    approver: 'editor',
    config: { user: '/Users/dev/.config/rootguard/config.toml', project: [] },
  };
}

export function noFolderStatus(): Status {
  return { ...normalStatus(), roots: [], union: [], entries: [], worktrees: [], summary: 'no folder open' };
}
