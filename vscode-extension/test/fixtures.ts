/**
 * Status payloads recorded from a real server run (`scripts/record_lsp_fixtures.py`
 * writes `test/fixtures/*.json`; `tests/test_status_contract.py` validates them
 * against the schema). Each call returns a fresh copy a test may change.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ExplainResult, Inventory, Status } from '../src/types';

const DIR = path.join(__dirname, '..', '..', 'test', 'fixtures');

function recorded<T>(name: string): T {
  return JSON.parse(fs.readFileSync(path.join(DIR, `${name}.json`), 'utf8')) as T;
}

export const SRC = '/Users/dev/src';
export const REPO = `${SRC}/shop`;
export const NARROW = `${REPO}/packages/checkout`;
export const HOTFIX = `${SRC}/shop-hotfix`;

/** The narrow window: `packages/checkout` and its linked worktree's copy, mounts reconciled. */
export function normalStatus(): Status {
  return recorded<Status>('status-narrow');
}

/** After adding `shop`: widened, inventory done, mounts reconciled. */
export function widenedStatus(): Status {
  return recorded<Status>('status-widened');
}

/** The first status after adding `shop`: widened, the inventory still counting. */
export function pendingStatus(): Status {
  return recorded<Status>('status-widened-pending');
}

export function noFolderStatus(): Status {
  return recorded<Status>('status-no-folder');
}

export function recordedExplain(): ExplainResult {
  return recorded<ExplainResult>('explain');
}

export function recordedInventory(): Inventory {
  return recorded<Inventory>('inventory');
}
