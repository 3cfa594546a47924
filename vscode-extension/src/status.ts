/**
 * Pure rendering of the server state into what the status bar shows:
 * text, Markdown tooltip, background and click command. No `vscode` import.
 */
import { ServerState, Status, Warning } from './types';
import { bullets, code, escape, plural } from './markdown';

export type Background = 'warning' | 'error' | undefined;

export interface StatusView {
  text: string;
  /** Markdown with theme icons (`$(name)`), rendered as a trusted-less MarkdownString. */
  tooltip: string;
  background: Background;
  command: string;
  /** Read by screen readers instead of the icon syntax. */
  accessibleText: string;
}

export const REPORT_COMMAND = 'rootguard.showWideningReport';
export const LOG_COMMAND = 'rootguard.showLog';
const WIDENED_CODE = 'union-widened';

/** Shows paths under the home directory as `~/…` to keep the tooltip short. */
export interface Paths {
  path(p: string): string;
  text(t: string): string;
}

export function pathsFor(home?: string): Paths {
  const root = home && home !== '/' ? home.replace(/[\\/]+$/, '') : undefined;
  const short = (p: string) => (root && (p === root || p.startsWith(`${root}/`) || p.startsWith(`${root}\\`)) ? `~${p.slice(root.length)}` : p);
  return {
    path: (p) => code(short(p)),
    text: (t) => escape(root ? t.split(`${root}/`).join('~/') : t),
  };
}

/**
 * What the status bar shows for a server state and a number of open folders;
 * `home` (optional) shortens paths in the tooltip.
 */
export function renderStatus(state: ServerState, folderCount: number, home?: string): StatusView {
  switch (state.kind) {
    case 'starting':
      return view('$(sync~spin) Root Guard', 'Root Guard: starting the server…', undefined, LOG_COMMAND);
    case 'down':
      return renderDown(state.error);
    case 'running':
      if (state.status === null) {
        return view('$(shield) Root Guard', 'Root Guard: waiting for the first status from the server…', undefined, LOG_COMMAND);
      }
      return renderRunning(state.status, folderCount, pathsFor(home));
  }
}

function renderDown(error: string): StatusView {
  const tooltip = [
    '**$(error) Root Guard server is not running**',
    escape(error),
    'Agents get no widening warnings and no approval prompts from this window. Click to open the log; run **Root Guard: Restart Server** after fixing the setting `rootguard.serverCommand`.',
  ].join('\n\n');
  return view('$(error) Root Guard off', tooltip, 'error', LOG_COMMAND);
}

function renderRunning(status: Status, folderCount: number, paths: Paths): StatusView {
  const problems = otherWarnings(status);
  const hasError = problems.some((w) => w.severity === 'error');
  let text: string;
  let background: Background;
  if (status.widened) {
    // the server words it, "(acknowledged)" included when the user accepted a union that stays wide
    text = `$(warning) ${widenedText(status)}`;
    background = 'warning';
  } else if (status.roots.length === 0 || folderCount === 0) {
    text = '$(shield) no folder';
    background = hasError ? 'error' : undefined;
  } else {
    // the server's summary: the union's entries ("2 roots (1 folder)"), as the tooltip, the tray and the docs count them
    text = `$(shield) ${status.summary.replace(/^⚠\s*/, '') || plural(status.union.length, 'root')}`;
    background = hasError ? 'error' : undefined;
  }
  if (!status.widened && problems.length > 0) {
    text += ` · ${plural(problems.length, hasError ? 'problem' : 'warning')}`;
  }
  return view(text, renderTooltip(status, paths), background, REPORT_COMMAND);
}

/**
 * The widened status bar text: the server's one-line summary (rendered once, in
 * Python, and shown the same by the tray and the warning message), without its ⚠.
 */
export function widenedText(status: Status): string {
  return status.summary.replace(/^⚠\s*/, '');
}

/** Warnings other than the widening itself, which the text already shows. */
function otherWarnings(status: Status): Warning[] {
  return (status.warnings ?? []).filter((w) => !(status.widened && w.code === WIDENED_CODE));
}

/** The Markdown tooltip: summary, union entries, shadowed, worktrees, mounts, warnings. */
export function renderTooltip(status: Status, paths: Paths = pathsFor()): string {
  const sections: string[] = [];
  const headline = status.summary ? paths.text(status.summary) : plural(status.roots.length, 'root');
  sections.push(`**$(shield) Root Guard** — ${headline}`);
  if (status.widened) {
    sections.push(renderWideningLines(status, paths));
  }
  if (status.roots.length === 0) {
    sections.push('No workspace folder is open: the editor hands agents no folder. Rules from your configuration still apply.');
  }
  sections.push(renderUnion(status, paths));
  const shadowed = status.shadowed ?? [];
  if (shadowed.length > 0) {
    sections.push(`**Shadowed** (inside another entry, they add nothing)\n\n${bullets(shadowed.map((s) => `${paths.path(s.path)} — inside ${paths.path(s.by)}`))}`);
  }
  const worktrees = status.worktrees ?? [];
  if (worktrees.length > 0) {
    sections.push(`**Worktrees**\n\n${bullets(worktrees.map((w) => worktreeLine(w, paths)))}`);
  }
  const mounts = renderMountMismatches(status, paths);
  if (mounts) {
    sections.push(mounts);
  }
  const warnings = otherWarnings(status);
  if (warnings.length > 0) {
    sections.push(`**Warnings**\n\n${bullets(warnings.map((w) => `${severityIcon(w.severity)} ${paths.text(w.message)}`))}`);
  }
  sections.push(status.widened ? '_Click for the widening report._' : '_Click for the report on roots and mounts._');
  return sections.join('\n\n');
}

/** The widening as the server words it: which entry widened what, then what it hands over. */
function renderWideningLines(status: Status, paths: Paths): string {
  return `**$(warning) The union widened**\n\n${bullets(status.widening_lines.map((line) => paths.text(line)))}`;
}

function renderUnion(status: Status, paths: Paths): string {
  const entries = status.entries && status.entries.length > 0
    ? status.entries.map((e) => `${paths.path(e.path)} — ${paths.text(e.reason)}${e.origin ? ` _(${escape(e.origin)})_` : ''}`)
    : status.union.map((p) => paths.path(p));
  if (entries.length === 0) {
    return '**Union**: empty — agents can read nothing outside explicit rules.';
  }
  return `**Union** (${plural(entries.length, 'entry', 'entries')})\n\n${bullets(entries)}`;
}

function worktreeLine(w: { path: string; mode: string; repository?: string; locked?: boolean; prunable?: boolean }, paths: Paths): string {
  const flags = [w.locked ? 'locked' : '', w.prunable ? 'prunable' : ''].filter(Boolean);
  const of = w.repository ? ` of ${paths.path(w.repository)}` : '';
  return `${paths.path(w.path)} — ${escape(w.mode)}${of}${flags.length ? ` (${flags.join(', ')})` : ''}`;
}

function renderMountMismatches(status: Status, paths: Paths): string | null {
  const mounts = status.mounts;
  if (!mounts) {
    return null;
  }
  const lines: string[] = [];
  for (const root of mounts.roots_without_mount ?? []) {
    lines.push(`no mount for ${paths.path(root)}`);
  }
  for (const m of mounts.mounts_outside_union ?? []) {
    lines.push(`${paths.path(m.source)} → ${code(m.target)} is mounted but outside the union`);
  }
  if (lines.length === 0) {
    return null;
  }
  return `**Mount mismatches**\n\n${bullets(lines)}`;
}

function severityIcon(severity: string): string {
  return severity === 'error' ? '$(error)' : severity === 'warning' ? '$(warning)' : '$(info)';
}

function view(text: string, tooltip: string, background: Background, command: string): StatusView {
  return { text, tooltip, background, command, accessibleText: text.replace(/\$\([^)]*\)\s*/g, 'Root Guard: ') };
}
