/* Generated from docs/rootguard-lsp.schema.json by `npm run contract` (json-schema-to-typescript); do not edit.
 * The schema is generated from lsp_bridge/core/status.py: change the dataclasses there. */

/**
 * Generated from lsp_bridge/core/status.py by `python -m lsp_bridge.core.status --write`; do not edit. rootguard/status: Status. rootguard/explain: ExplainParams → ExplainResult | RequestError. rootguard/inventory: → Inventory | null. rootguard/access: AccessParams → AccessResult.
 */
/**
 * ``rootguard/access`` parameters: a tool asks for an access.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "AccessParams".
 */
export interface AccessParams {
  path: string;
  op?: 'read' | 'write' | 'delete' | 'rename' | 'metadata';
  dest?: string | null;
  tool?: string | null;
}
/**
 * The answer: ``decision`` is final (a person answered request-level accesses).
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "AccessResult".
 */
export interface AccessResult {
  decision: 'allow' | 'request' | 'deny';
  path: string | null;
  rule: string | null;
  reason: string;
  op?: ('read' | 'write' | 'delete' | 'rename' | 'metadata') | null;
  rule_source?: string | null;
  dest?: AccessResult | null;
  policy_decision?: ('allow' | 'request' | 'deny') | null;
  approval?: ('allow_once' | 'allow_session' | 'always' | 'deny' | 'timeout' | 'no_approver') | null;
  approver?: string | null;
}
/**
 * The files one added root adds (those of the narrow roots inside it not counted).
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "AddedFiles".
 */
export interface AddedFiles {
  path: string;
  files: number;
}
/**
 * An agent present for the window's folders, and whether Root Guard's hook guards it.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "AgentEntry".
 */
export interface AgentEntry {
  agent: string;
  label: string;
  present: boolean;
  config_dirs: string[];
  guarded: boolean;
  hooks: string[];
  note: string;
}
/**
 * A cloud identity a CI file names.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "CiIdentity".
 */
export interface CiIdentity {
  cloud: 'aws' | 'azure' | 'gcp';
  kind: string;
  value: string;
}
/**
 * A CI workflow naming cloud roles.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "CiRoles".
 */
export interface CiRoles {
  path: string;
  roles: string[];
  identities: CiIdentity[];
  capped: boolean;
}
/**
 * Where this session's configuration lives (the user file may not exist yet).
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "ConfigPaths".
 */
export interface ConfigPaths {
  user: string | null;
  project: string[];
}
/**
 * A bind mount found in the configuration or an MCP server's arguments.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "ConfiguredMount".
 */
export interface ConfiguredMount {
  source: string;
  target: string;
  mode: string;
  origin: string;
}
/**
 * A file holding credentials, and how many.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "CredentialFile".
 */
export interface CredentialFile {
  path: string;
  count: number;
}
/**
 * The decision for one operation.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "ExplainDecision".
 */
export interface ExplainDecision {
  op: 'read' | 'write' | 'delete' | 'rename' | 'metadata';
  decision: 'allow' | 'request' | 'deny';
  rule: string | null;
  reason: string;
}
/**
 * ``rootguard/explain`` parameters.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "ExplainParams".
 */
export interface ExplainParams {
  path: string;
  op?: ('read' | 'write' | 'delete' | 'rename' | 'metadata') | null;
}
/**
 * ``rootguard/explain`` result.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "ExplainResult".
 */
export interface ExplainResult {
  path: string;
  decisions: ExplainDecision[];
}
/**
 * A link into a first-party package of the repository.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "FirstPartyLink".
 */
export interface FirstPartyLink {
  link: string;
  target: string;
  via: 'link' | 'store';
}
/**
 * A git directory newly exposed: its size, commits and deleted sensitive files.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "GitHistory".
 */
export interface GitHistory {
  path: string;
  bytes: number;
  size: string;
  commits: number | null;
  deleted_sensitive: string[] | null;
  via: string[];
  renamed_sensitive: {
    [k: string]: string | boolean;
  }[];
}
/**
 * A toolchain mount held until the person approves it (new, asked for by a file the agent can write).
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "HeldMount".
 */
export interface HeldMount {
  path: string;
  kind: string;
  reason: string;
  cause: string | null;
}
/**
 * What the union after the widening exposes that the one before did not.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "Inventory".
 */
export interface Inventory {
  widens: boolean;
  files_before: number;
  files_after: number;
  ratio: number;
  credentials: CredentialFile[];
  git: GitHistory[];
  siblings: string[];
  ci_roles: CiRoles[];
  stores: PackageStore[];
  added_roots: string[];
  before: string[];
  after: string[];
  errors: string[];
  notes: string[];
  added_files: AddedFiles[];
}
/**
 * A package-manager store, reported apart from the file count.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "PackageStore".
 */
export interface PackageStore {
  path: string;
  files: number;
}
/**
 * A mounted source that lies outside the union.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "MountOutsideUnion".
 */
export interface MountOutsideUnion {
  source: string;
  target: string;
}
/**
 * Mount reconciliation: configured mounts against the union, and a narrow set.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "Mounts".
 */
export interface Mounts {
  mounts: ConfiguredMount[];
  roots_without_mount: string[];
  mounts_outside_union: MountOutsideUnion[];
  suggested: SuggestedMount[];
  suggested_for: string[];
  docker_args: string[];
  unrescuable: UnrescuableLink[];
  first_party: FirstPartyLink[];
  single_files: string[];
  refused?: RefusedPath[];
  held?: HeldMount[];
}
/**
 * One mount of the suggested narrow set.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "SuggestedMount".
 */
export interface SuggestedMount {
  source: string;
  target: string;
  mode: string;
  reason: string;
  beyond_acknowledged: boolean;
  kind?: 'root' | 'store' | 'modules' | 'file';
  cause?: string | null;
}
/**
 * A link whose target cannot be mounted narrowly.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "UnrescuableLink".
 */
export interface UnrescuableLink {
  link: string;
  target: string;
  reason: string;
}
/**
 * A path a repository's toolchain file asked for that is never mounted (a credential, ``.git``, a device...).
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "RefusedPath".
 */
export interface RefusedPath {
  path: string;
  reason: string;
  cause: string | null;
}
/**
 * A custom request that could not be answered.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "RequestError".
 */
export interface RequestError {
  error: string;
}
/**
 * An entry inside another one: it adds nothing to the union.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "ShadowedEntry".
 */
export interface ShadowedEntry {
  path: string;
  by: string;
  origin: 'folder' | 'worktree' | 'config' | 'environment' | 'temp' | 'any-path' | 'git';
  reason: string;
}
/**
 * The ``rootguard/status`` notification: what one editor window exposes.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "Status".
 */
export interface Status {
  version: number;
  session: string;
  roots: string[];
  union: string[];
  entries: UnionEntry[];
  shadowed: ShadowedEntry[];
  worktrees: WorktreeEntry[];
  mounts: Mounts | null;
  widened: boolean;
  acknowledged: boolean;
  withdrawable: boolean;
  reference: string[];
  widening: WideningEntry[];
  inventory: Inventory | null;
  inventory_pending: boolean;
  summary: string;
  widening_lines: string[];
  warning_line: string;
  warnings: StatusWarning[];
  approver: 'tray' | 'editor' | 'none';
  config: ConfigPaths;
  watch_limit?: string | null;
  agents?: AgentEntry[] | null;
}
/**
 * One entry of the effective union, and why it is there.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "UnionEntry".
 */
export interface UnionEntry {
  path: string;
  origin: 'folder' | 'worktree' | 'config' | 'environment' | 'temp' | 'any-path' | 'git';
  reason: string;
}
/**
 * A sibling checkout of a folder's repository and how it participates.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "WorktreeEntry".
 */
export interface WorktreeEntry {
  path: string;
  checkout: string;
  repository: string;
  mode: 'include' | 'request' | 'ignore';
  locked: boolean;
  prunable: boolean;
}
/**
 * One new union entry that made the union larger.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "WideningEntry".
 */
export interface WideningEntry {
  folder: string;
  entry: string | null;
  contains: string[];
  kind: 'ancestor' | 'disjoint';
}
/**
 * An error or warning the window should show.
 *
 * This interface was referenced by `RootGuardLsp`'s JSON-Schema
 * via the `definition` "StatusWarning".
 */
export interface StatusWarning {
  severity: 'error' | 'warning';
  code: string;
  message: string;
}
