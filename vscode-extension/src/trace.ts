/**
 * "Root Guard: Trace a Command": asks the language server (`rootguard/trace`) to run a
 * command traced under this window's roots, shows the proposed grants in a TOML
 * preview, and on request appends them to the user configuration file (where a
 * grant outside the editor's folders takes effect) or to the project's
 * `.rootguard.toml`. The pure part (`splitCommandLine`, `traceSummary`,
 * `previewText`, `appendSnippet`) is tested without VS Code.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

export const TRACE_COMMAND = 'rootguard.traceCommand';
export const TRACE_REQUEST = 'rootguard/trace';
export const ADD_USER = 'Add to User Configuration';
export const ADD_PROJECT = 'Add to .rootguard.toml';

export interface TraceResult {
  command: string[];
  exit_code: number;
  outside: { path: string; ops: string[]; group: string }[];
  proposed: { paths: { id: string; path: string; kind: string; group: string }[]; mounts: unknown[] };
  refused: { path: string; reason: string }[];
  quiet_failures: { path: string; name: string; status?: string; reason?: string }[];
  user_file: string;
  snippet: string;
  output?: string;
  error?: string;
}

/** Words of a command line: whitespace-separated, with '...' and "..." quoting and \ escapes. */
export function splitCommandLine(text: string): string[] {
  const words: string[] = [];
  let current = '';
  let inWord = false;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === quote) {
        quote = null;
      } else if (ch === '\\' && quote === '"' && i + 1 < text.length && '"\\$`'.includes(text[i + 1])) {
        current += text[++i];
      } else {
        current += ch;
      }
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < text.length) {
      current += text[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) {
        words.push(current);
      }
      current = '';
      inWord = false;
    } else {
      current += ch;
      inWord = true;
    }
  }
  if (quote) {
    throw new Error(`unterminated ${quote} quote in the command`);
  }
  if (inWord) {
    words.push(current);
  }
  return words;
}

/** One line a person reads whole. */
export function traceSummary(result: TraceResult): string {
  const grants = result.proposed.paths.length;
  const parts = [
    `${result.command.join(' ')} exited ${result.exit_code}`,
    `${grants} grant${grants === 1 ? '' : 's'} proposed`,
  ];
  if (result.refused.length) {
    parts.push(`${result.refused.length} refused (${result.refused.map((r) => path.basename(r.path)).join(', ')})`);
  }
  const quiet = result.quiet_failures.filter((q) => q.status !== 'proposed');
  if (quiet.length) {
    parts.push(`${quiet.length} quiet failure${quiet.length === 1 ? '' : 's'}`);
  }
  return `Root Guard trace: ${parts.join('; ')}`;
}

/** The preview: refusals and quiet failures as comments above the snippet. */
export function previewText(result: TraceResult): string {
  const lines: string[] = [];
  for (const r of result.refused) {
    lines.push(`# needed but refused (never proposed): ${r.path}: ${r.reason}`);
  }
  for (const q of result.quiet_failures) {
    lines.push(`# quiet failure: looked for ${q.path} [${q.name}]${q.status ? ` (${q.status})` : ''}`);
  }
  if (lines.length) {
    lines.push('');
  }
  return lines.join('\n') + result.snippet;
}

/** The file's text with the snippet appended (a new file starts with `version = 2`). */
export function appendSnippet(existing: string | undefined, snippet: string): string {
  if (existing === undefined || existing.trim() === '') {
    return `version = 2\n\n${snippet}`;
  }
  const separator = existing.endsWith('\n\n') ? '' : existing.endsWith('\n') ? '\n' : '\n\n';
  return existing + separator + snippet;
}

export interface TraceDeps {
  request<R>(method: string, params: unknown): Promise<R>;
  userFile(): string | undefined;
}

export async function traceCommand(deps: TraceDeps, given?: string): Promise<TraceResult | undefined> {
  const text = given ?? (await vscode.window.showInputBox({
    title: 'Root Guard: Trace a Command',
    prompt: 'Runs in the first workspace folder, the disk read-only and the roots writable, traced with strace',
    placeHolder: 'e.g. npx tsc --noEmit',
  }));
  if (!text || !text.trim()) {
    return undefined;
  }
  const command = splitCommandLine(text);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Root Guard: tracing ${command.join(' ')}…` },
    () => deps.request<TraceResult>(TRACE_REQUEST, { command }),
  );
  if (result.error) {
    void vscode.window.showErrorMessage(`Root Guard: trace failed: ${result.error}`);
    return result;
  }
  const document = await vscode.workspace.openTextDocument({ content: previewText(result), language: 'toml' });
  await vscode.window.showTextDocument(document, { preview: true });
  const choice = await vscode.window.showInformationMessage(traceSummary(result), ADD_USER, ADD_PROJECT);
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const target = choice === ADD_USER ? (result.user_file || deps.userFile())
    : choice === ADD_PROJECT && folder ? path.join(folder, '.rootguard.toml') : undefined;
  if (!target) {
    return result;
  }
  if (choice === ADD_PROJECT) {
    void vscode.window.showWarningMessage(
      'Root Guard: a project file cannot allow paths outside the workspace folders; such a grant becomes a request ' +
      '(asked each time; hidden under rootguard run). The user configuration is where it takes effect.');
  }
  const existing = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : undefined;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, appendSnippet(existing, result.snippet));
  await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.file(target)));
  return result;
}
