/**
 * Pure Markdown of the widening report: what the union hands over and the
 * narrow mounts that would keep it small. No `vscode` import.
 * Names and counts only: never a file's content or a secret value.
 */
import { Inventory, Mounts, Status } from './types';
import { bullets, code, count, escape, plural, ratio } from './markdown';

const LIMIT = 50;

/** The report as Markdown. */
export function renderReport(status: Status): string {
  const parts: string[] = ['# Root Guard: widening report'];
  parts.push(headline(status));
  parts.push(section('Workspace folders', status.roots.map((r) => code(r)), 'No workspace folder is open.'));
  if (status.widened || (status.widening ?? []).length > 0) {
    parts.push(section('What widened', (status.widening ?? []).map(wideningLine), 'The last change made the union larger.'));
  }
  parts.push(renderInventory(status));
  parts.push(renderUnion(status));
  parts.push(renderMounts(status.mounts ?? null));
  const warnings = status.warnings ?? [];
  if (warnings.length > 0) {
    parts.push(section('Warnings', warnings.map((w) => `**${escape(w.severity)}**${w.code ? ` ${code(w.code)}` : ''}: ${escape(w.message)}`)));
  }
  return parts.filter(Boolean).join('\n\n') + '\n';
}

/** The `docker run` volume arguments of the suggested mounts, shell-quoted, or ''. */
export function dockerArguments(status: Status): string {
  const args = status.mounts?.docker_args ?? [];
  return args.map(shellQuote).join(' ');
}

function headline(status: Status): string {
  if (status.widened) {
    const summary = status.summary ? escape(status.summary.replace(/^⚠\s*/, '')) : '';
    return `> **⚠ The union widened.** ${summary}`.trimEnd();
  }
  return `> The union did not widen${status.summary ? `: ${escape(status.summary)}` : ''}.`;
}

function wideningLine(w: { folder: string; entry: string | null; kind: string }): string {
  if (w.entry && w.kind === 'ancestor') {
    return `${code(w.folder)} contains the earlier entry ${code(w.entry)}`;
  }
  if (w.entry) {
    return `${code(w.folder)} widened ${code(w.entry)} (${escape(w.kind)})`;
  }
  return `${code(w.folder)} was added, disjoint from the earlier entries`;
}

function renderInventory(status: Status): string {
  const inventory = status.inventory;
  if (!inventory) {
    if (status.inventory_pending) {
      return '## What the union exposes\n\nCounting files, credentials and history… this report updates when it is done.';
    }
    return status.widened ? '## What the union exposes\n\nNo inventory yet.' : '';
  }
  return ['## What the union exposes', filesTable(inventory), ...inventoryDetails(inventory)].join('\n\n');
}

function filesTable(inventory: Inventory): string {
  const shown = ratio(inventory.ratio) ?? '—';
  const added = inventory.files_after - inventory.files_before;
  return [
    '| Files before | Files after | Added | Ratio |',
    '| ---: | ---: | ---: | ---: |',
    `| ${count(inventory.files_before)} | ${count(inventory.files_after)} | ${added >= 0 ? '+' : ''}${count(added)} | ${shown} |`,
  ].join('\n');
}

function inventoryDetails(inventory: Inventory): string[] {
  const details: string[] = [];
  const credentials = inventory.credentials ?? [];
  details.push(section(
    'Credential files',
    credentials.map((c) => `${code(c.path)} — ${plural(c.count, 'credential')}`),
    'No credential-bearing file found.',
  ));
  const git = inventory.git ?? [];
  if (git.length > 0) {
    details.push(section('Git history', git.map((g) => {
      const facts = [g.size, g.commits !== null ? plural(g.commits, 'commit') : 'an unknown number of commits'];
      const deleted = g.deleted_sensitive ?? [];
      const history = deleted.length > 0 ? `; deleted but still in history: ${deleted.map((d) => code(d)).join(', ')}` : '';
      return `${code(g.path)}${facts.length ? ` — ${facts.join(', ')}` : ''}${history}`;
    })));
  }
  const siblings = inventory.siblings ?? [];
  if (siblings.length > 0) {
    details.push(section(`Sibling packages now exposed (${count(siblings.length)})`, siblings.map((s) => code(s))));
  }
  const roles = inventory.ci_roles ?? [];
  if (roles.length > 0) {
    details.push(section('CI workflows naming cloud roles', roles.map((r) => `${code(r.path)} — ${r.roles.map((role) => code(role)).join(', ')}`)));
  }
  const stores = inventory.stores ?? [];
  if (stores.length > 0) {
    details.push(section('Package stores (not counted above)', stores.map((s) => `${code(s.path)} — ${plural(s.files, 'file')}`)));
  }
  return details;
}

function renderUnion(status: Status): string {
  const entries = status.entries && status.entries.length > 0
    ? status.entries.map((e) => `${code(e.path)} — ${escape(e.reason)} _(${escape(e.origin)})_`)
    : status.union.map((p) => code(p));
  const parts = [section('Effective union', entries, 'Empty: agents can reach nothing outside explicit rules.')];
  const shadowed = status.shadowed ?? [];
  if (shadowed.length > 0) {
    parts.push(section('Shadowed entries', shadowed.map((s) => `${code(s.path)} — inside ${code(s.by)}, adds nothing`)));
  }
  const worktrees = status.worktrees ?? [];
  if (worktrees.length > 0) {
    parts.push(section('Linked worktrees', worktrees.map((w) => `${code(w.path)} — ${escape(w.mode)}${w.repository ? ` (of ${code(w.repository)})` : ''}`)));
  }
  return parts.join('\n\n');
}

function renderMounts(mounts: Mounts | null): string {
  if (!mounts) {
    return '';
  }
  const parts: string[] = ['## Mounts'];
  const current = mounts.mounts ?? [];
  if (current.length > 0) {
    parts.push(section('Configured mounts', current.map((m) => `${code(m.source)} → ${code(m.target)} ${m.mode ? `(${escape(m.mode)})` : ''}${m.origin ? ` from ${escape(m.origin)}` : ''}`.trimEnd())));
  }
  const mismatches = [
    ...(mounts.roots_without_mount ?? []).map((r) => `no mount for the folder ${code(r)}`),
    ...(mounts.mounts_outside_union ?? []).map((m) => `${code(m.source)} → ${code(m.target)} is mounted but outside the union`),
  ];
  if (mismatches.length > 0) {
    parts.push(section('Mismatches', mismatches));
  }
  const suggested = mounts.suggested ?? [];
  if (suggested.length > 0) {
    const beyond = suggested.filter((s) => s.beyond_acknowledged).length;
    parts.push([
      '### Suggested narrow mounts',
      '',
      `For the narrow roots you acknowledged (${(mounts.suggested_for ?? []).map((r) => code(r)).join(', ')}), never the widened union.`
        + (beyond > 0 ? ` ⚠ ${plural(beyond, 'mount')} ${beyond === 1 ? 'reaches' : 'reach'} outside the acknowledged union: they hand over more than you acknowledged.` : ''),
      '',
      '| Source | Target | Mode | Why |',
      '| --- | --- | --- | --- |',
      ...suggested.map((s) => `| ${cell(s.source)} | ${cell(s.target)} | ${escape(s.mode)} | ${escape(s.reason ?? '')} |`),
    ].join('\n'));
  }
  const docker = mounts.docker_args ?? [];
  if (docker.length > 0) {
    parts.push(`### Docker arguments\n\n\`\`\`sh\n${docker.map(shellQuote).join(' ')}\n\`\`\``);
  }
  if ((mounts.unrescuable ?? []).length > 0) {
    parts.push(section('Links no narrow mount can serve', (mounts.unrescuable ?? []).map((u) => `${code(u.link)} → ${code(u.target)}${u.reason ? ` — ${escape(u.reason)}` : ''}`)));
  }
  if ((mounts.first_party ?? []).length > 0) {
    parts.push(section('First-party links (sibling packages)', (mounts.first_party ?? []).map((f) => `${code(f.link)} → ${code(f.target)}`)));
  }
  if ((mounts.single_files ?? []).length > 0) {
    parts.push(section('Single files to mount', (mounts.single_files ?? []).map((f) => code(f))));
  }
  return parts.length > 1 ? parts.join('\n\n') : '';
}

function section(title: string, lines: string[], empty = ''): string {
  const level = title === 'Workspace folders' || title === 'Effective union' || title === 'What widened' ? '##' : '###';
  if (lines.length === 0) {
    return empty ? `${level} ${title}\n\n${empty}` : '';
  }
  return `${level} ${title}\n\n${bullets(lines, LIMIT)}`;
}

/** A table cell: a code span with pipes escaped. */
function cell(text: string): string {
  return code(text).replace(/\|/g, '\\|');
}

/** POSIX shell quoting, only when needed. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
