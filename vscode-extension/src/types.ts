/** The `rootguard/status` payload and the request results, as the server sends them. */

export type Origin = 'folder' | 'worktree' | 'config' | 'environment' | 'temp' | 'any-path' | string;
export type WorktreeMode = 'include' | 'request' | 'ignore' | string;
export type Severity = 'warning' | 'error' | 'information' | string;

export interface UnionEntry {
  path: string;
  origin: Origin;
  reason: string;
}

export interface Shadowed {
  path: string;
  by: string;
}

export interface Worktree {
  path: string;
  mode: WorktreeMode;
  repository?: string;
  locked?: boolean;
  prunable?: boolean;
}

export interface MountEntry {
  source: string;
  target: string;
  mode?: string;
  origin?: string;
}

export interface SuggestedMount {
  source: string;
  target: string;
  mode: string;
  reason?: string;
}

export interface Mounts {
  mounts?: MountEntry[];
  roots_without_mount?: string[];
  mounts_outside_union?: Array<{ source: string; target: string }>;
  suggested?: SuggestedMount[];
  docker_args?: string[];
  unrescuable?: Array<{ link: string; target: string; reason?: string }>;
  first_party?: Array<{ link: string; target: string }>;
  single_files?: string[];
}

export interface Widening {
  folder: string;
  entry: string | null;
  kind: 'ancestor' | 'disjoint' | string;
}

export interface GitHistory {
  path: string;
  bytes?: number;
  commits?: number;
  deleted_sensitive?: string[];
}

export interface Inventory {
  widens: boolean;
  files_before: number;
  files_after: number;
  ratio: number | null;
  credentials?: Array<{ path: string; count: number }>;
  git?: GitHistory[];
  siblings?: string[];
  ci_roles?: Array<{ path: string; roles: string[] }>;
  stores?: Array<{ path: string; files: number }>;
}

export interface Warning {
  severity: Severity;
  code?: string;
  message: string;
}

export interface Status {
  version?: number;
  session?: string;
  roots: string[];
  union: string[];
  entries?: UnionEntry[];
  shadowed?: Shadowed[];
  worktrees?: Worktree[];
  mounts?: Mounts | null;
  widened: boolean;
  /** True when the user has accepted this union (`rootguard.acknowledge`); no notification then. */
  acknowledged?: boolean;
  widening?: Widening[];
  inventory?: Inventory | null;
  inventory_pending?: boolean;
  summary?: string;
  warnings?: Warning[];
}

export type Operation = 'read' | 'write' | 'delete' | 'rename' | 'metadata';

export interface Decision {
  op: Operation | string;
  decision: 'allow' | 'request' | 'deny' | string;
  rule: string | null;
  reason: string;
}

export interface ExplainResult {
  path: string;
  decisions: Decision[];
}

/** What the extension knows about its server, for the status bar. */
export type ServerState =
  | { kind: 'starting' }
  | { kind: 'running'; status: Status | null }
  | { kind: 'down'; error: string };
