/**
 * "Root Guard: Trace a Command": asks the language server (`rootguard/trace`) to run a
 * command traced under this window's roots, shows the proposed grants in a TOML
 * preview, and on request merges them into the user configuration file (where a
 * grant outside the editor's folders takes effect) through the one writer,
 * `rootguard trace --apply -`: the proposal is checked again by the engine, ids stay
 * stable and unique, an equal rule is reused, applying twice changes nothing. No
 * "Add" is offered when nothing is proposed. The pure part (`splitCommandLine`,
 * `traceSummary`, `previewText`, `hasProposal`, `applyArgs`) is tested without VS Code.
 */
import { spawn } from 'child_process';
import * as path from 'path';
import * as vscode from 'vscode';

export const TRACE_COMMAND = 'rootguard.traceCommand';
export const TRACE_REQUEST = 'rootguard/trace';
export const ADD_USER = 'Add to User Configuration';

export interface TraceResult {
  command: string[];
  exit_code: number;
  outside: { path: string; ops: string[]; group: string }[];
  roots?: string[];
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

/** Whether there is anything to add: no "Add" button otherwise. */
export function hasProposal(result: TraceResult): boolean {
  return result.proposed.paths.length > 0 || result.proposed.mounts.length > 0;
}

/** `rootguard trace --json --root R... --apply -` (the proposal goes to its stdin). */
export function applyArgs(result: TraceResult, folders: readonly string[]): string[] {
  const roots = result.roots && result.roots.length ? result.roots : folders;
  return ['trace', '--json', ...roots.flatMap((root) => ['--root', root]), '--apply', '-'];
}

export interface ApplyOutcome {
  written?: { user_file: string; added: string[]; reused: Record<string, string>; changed: boolean };
  refused?: { path: string; reason: string }[];
}

/** One line a person reads whole, after the merge. */
export function applySummary(outcome: ApplyOutcome): string {
  const written = outcome.written;
  if (!written) {
    return 'Root Guard: nothing written';
  }
  const refused = outcome.refused?.length ? `; ${outcome.refused.length} refused on the second check` : '';
  if (!written.changed) {
    return `Root Guard: ${written.user_file} unchanged (every proposed rule is already there)${refused}`;
  }
  const reused = Object.keys(written.reused).length;
  return `Root Guard: added ${written.added.length} rule${written.added.length === 1 ? '' : 's'} to ${written.user_file}` +
    `${reused ? `, ${reused} already there` : ''}${refused}`;
}

const CLI_TIMEOUT_MS = 120_000;

/** `LAUNCHER... ARGS` with STDIN written to it: its stdout, or an error with its last stderr line. */
export function runCli(launcher: readonly string[], args: readonly string[], stdin: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(launcher[0], [...launcher.slice(1), ...args], { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString('utf8'); });
    child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString('utf8'); });
    child.on('error', (error) => { clearTimeout(timer); reject(error); });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) {
        resolve(out);
      } else {
        reject(new Error(err.trim().split('\n').pop() || `rootguard exited ${code}`));
      }
    });
    child.stdin.end(stdin);
  });
}

export interface TraceDeps {
  request<R>(method: string, params: unknown): Promise<R>;
  /** Runs `rootguard ARGS` with STDIN; resolves with its stdout, rejects with its error line. */
  runCli(args: string[], stdin: string): Promise<string>;
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
  if (!hasProposal(result)) {
    void vscode.window.showInformationMessage(traceSummary(result));  // nothing to add: no button
    return result;
  }
  const choice = await vscode.window.showInformationMessage(traceSummary(result), ADD_USER);
  if (choice !== ADD_USER) {
    return result;
  }
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const stdout = await deps.runCli(applyArgs(result, folders), JSON.stringify(result));
  const outcome = JSON.parse(stdout) as ApplyOutcome;
  void vscode.window.showInformationMessage(applySummary(outcome));
  if (outcome.written?.user_file) {
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.file(outcome.written.user_file)));
  }
  return result;
}
