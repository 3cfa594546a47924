/**
 * The `rootguard/status` payload and the request results, as the server sends them.
 *
 * The shapes come from `./contract`, generated from the server's JSON Schema
 * (`docs/rootguard-lsp.schema.json`, itself generated from `lsp_bridge/core/status.py`);
 * a mocha test fails when `contract.ts` is stale. Only aliases live here.
 */
import type {
  ExplainDecision,
  ExplainResult as ContractExplainResult,
  Inventory as ContractInventory,
  Mounts as ContractMounts,
  Status as ContractStatus,
  StatusWarning,
} from './contract';

export type {
  AccessParams,
  AccessResult,
  ConfigPaths,
  ExplainParams,
  GitHistory,
  RequestError,
  ShadowedEntry,
  UnionEntry,
  WideningEntry,
  WorktreeEntry,
} from './contract';

export type Status = ContractStatus;
export type Inventory = ContractInventory;
export type Mounts = ContractMounts;
export type Warning = StatusWarning;
export type Decision = ExplainDecision;
export type ExplainResult = ContractExplainResult;
export type Operation = ExplainDecision['op'];

/** What the extension knows about its server, for the status bar. */
export type ServerState =
  | { kind: 'starting' }
  | { kind: 'running'; status: Status | null }
  | { kind: 'down'; error: string };
