/** Small helpers to put untrusted text (paths, messages) into Markdown safely. */

/** A code span that survives backticks inside `text`. */
export function code(text: string): string {
  const runs = text.match(/`+/g) ?? [];
  const longest = runs.reduce((n, run) => Math.max(n, run.length), 0);
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/**
 * Escapes Markdown emphasis, links, code, HTML, entities and theme-icon syntax
 * in plain text, on one line, and block syntax (`#`, `-`, `1.`) at its start.
 */
export function escape(text: string): string {
  return text
    .replace(/[\\`*_[\]()|<>~$!&]/g, (c) => `\\${c}`)
    .replace(/\r?\n/g, ' ')
    .replace(/^(\s*)([#+\-=])/, '$1\\$2')
    .replace(/^(\s*\d+)([.)])/, '$1\\$2');
}

/** `1234567` -> `1,234,567`, locale independent so tests are stable. */
export function count(n: number): string {
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `n thing` / `n things`. */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count(n)} ${n === 1 ? singular : pluralForm}`;
}

/** Bytes in a short human unit: `640 MB`. */
export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = value >= 10 || unit === 0 ? 0 : 1;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** `×180` for large ratios, `×1.5` for small ones, `null` when there is none. */
export function ratio(value: number | null | undefined): string | null {
  if (value === null || value === undefined || !Number.isFinite(value) || value <= 0) {
    return null;
  }
  return value >= 10 ? `×${count(value)}` : `×${(Math.round(value * 10) / 10).toString()}`;
}

/** A bulleted list capped at `limit` lines, with an "and N more" line. */
export function bullets(lines: string[], limit = 20): string {
  const shown = lines.slice(0, limit).map((line) => `- ${line}`);
  if (lines.length > limit) {
    shown.push(`- … and ${count(lines.length - limit)} more`);
  }
  return shown.join('\n');
}
