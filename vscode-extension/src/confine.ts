/**
 * "Root Guard: Run MCP Server Confined": rewrites a stdio server entry of
 * `.vscode/mcp.json` or `.mcp.json` so it starts under `rootguard run`, after a
 * preview. The JSON(C) is edited in place with jsonc-parser, so comments and
 * formatting survive. The pure part (`listServers`, `confinedEntry`,
 * `rewriteServer`) is tested without VS Code.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { applyEdits, modify, parse, ParseError } from 'jsonc-parser';

export const CONFINE_COMMAND = 'rootguard.confineMcpServer';
export const MCP_FILES = [
  { relative: '.vscode/mcp.json', key: 'servers', root: '${workspaceFolder}' },
  { relative: '.mcp.json', key: 'mcpServers', root: '.' },
] as const;
const CONTAINER_PROGRAMS = ['docker', 'podman'];

export type Confinement = 'unconfined' | 'confined' | 'container' | 'remote' | 'guarded';

export interface ServerEntry {
  key: string; // "servers" | "mcpServers"
  name: string;
  entry: Record<string, unknown>;
  confinement: Confinement;
}

function program(command: string): string {
  return command.split(/[\\/]/).pop()!.toLowerCase().replace(/\.exe$/, '');
}

/** How a server entry runs today. */
export function confinementOf(entry: Record<string, unknown>): Confinement {
  const command = entry.command;
  if (typeof command !== 'string' || typeof entry.url === 'string' || ['http', 'sse'].includes(String(entry.type))) {
    return 'remote';
  }
  const args = Array.isArray(entry.args) ? entry.args : [];
  const name = program(command);
  if (CONTAINER_PROGRAMS.includes(name) && args.includes('run')) {
    return 'container';
  }
  if (name === 'rootguard' && args[0] === 'run') {
    return 'confined';
  }
  if (name === 'rootguard' && args[0] === 'mcp') {
    return 'guarded';
  }
  // the bundle: <python> …/bundled/tool/launch.py lsp_bridge.cli run|mcp …
  const cli = args.findIndex((a, i) => i > 0 && a === 'lsp_bridge.cli' && /launch\.py$/.test(String(args[i - 1])));
  if (cli > 0 && args[cli + 1] === 'run') {
    return 'confined';
  }
  if (cli > 0 && args[cli + 1] === 'mcp') {
    return 'guarded';
  }
  return 'unconfined';
}

/** The stdio servers of one MCP config text (JSON with comments); throws on invalid JSON. */
export function listServers(text: string): ServerEntry[] {
  const errors: ParseError[] = [];
  const data = parse(text, errors, { allowTrailingComma: true });
  if (errors.length > 0 || typeof data !== 'object' || data === null) {
    throw new Error('the file is not valid JSON');
  }
  const found: ServerEntry[] = [];
  for (const key of ['servers', 'mcpServers']) {
    const servers = (data as Record<string, unknown>)[key];
    if (typeof servers !== 'object' || servers === null) {
      continue;
    }
    for (const [name, entry] of Object.entries(servers as Record<string, unknown>)) {
      if (typeof entry === 'object' && entry !== null) {
        found.push({ key, name, entry: entry as Record<string, unknown>, confinement: confinementOf(entry as Record<string, unknown>) });
      }
    }
  }
  return found;
}

/**
 * The entry rewritten to start under `rootguard run --root ROOT -- command args...`:
 * `rootguard` is the program (an absolute path), `prefix` what it needs before `run`
 * (the bundle: `[launch.py, lsp_bridge.cli]` with a Python as the program).
 */
export function confinedEntry(entry: Record<string, unknown>, root: string, rootguard = 'rootguard', prefix: readonly string[] = []): Record<string, unknown> {
  if (confinementOf(entry) !== 'unconfined') {
    throw new Error('only an unconfined stdio server can be wrapped');
  }
  const args = Array.isArray(entry.args) ? entry.args.map(String) : [];
  return { ...entry, command: rootguard, args: [...prefix, 'run', '--root', root, '--', String(entry.command), ...args] };
}

/** `text` with server `name` under `key` replaced by `entry`; comments and formatting kept. */
export function rewriteServer(text: string, key: string, name: string, entry: Record<string, unknown>): string {
  const edits = modify(text, [key, name], entry, { formattingOptions: { insertSpaces: true, tabSize: 2 } });
  return applyEdits(text, edits);
}

export function commandLine(entry: Record<string, unknown>): string {
  const args = Array.isArray(entry.args) ? entry.args.map(String) : [];
  return [String(entry.command), ...args].map((a) => (/[\s"'$]/.test(a) ? JSON.stringify(a) : a)).join(' ');
}

interface ServerPick extends vscode.QuickPickItem {
  file: string;
  key: string;
  name: string;
  entry: Record<string, unknown>;
  root: string;
}

/**
 * The launcher a config file may name: an absolute path to a program that exists now (the
 * bundled one, a `rootguard` on PATH). A bare name or a missing file is refused before
 * anything is written: a config that names them breaks the server it wraps ("spawn ENOENT").
 */
export function checkedLauncher(launcher: readonly string[], exists: (file: string) => boolean = fs.existsSync): string[] {
  if (launcher.length === 0 || !path.isAbsolute(launcher[0]) || !exists(launcher[0])) {
    throw new Error(`no Root Guard launcher to write into the config (${launcher[0] ?? 'none found'} is not an existing absolute path)`);
  }
  for (const part of launcher.slice(1)) {
    if (path.isAbsolute(part) && !exists(part)) {
      throw new Error(`the launcher's ${part} does not exist`);
    }
  }
  return [...launcher];
}

/** The command: pick an unconfined server, preview the change, rewrite on confirmation.
 * `launcher`: how this installation runs `rootguard` (absolute paths; checked before writing). */
export async function confineMcpServer(
  launcher: readonly string[],
  folders: readonly string[] = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
): Promise<string | undefined> {
  const picks: ServerPick[] = [];
  for (const folder of folders) {
    for (const file of MCP_FILES) {
      const full = path.join(folder, ...file.relative.split('/'));
      if (!fs.existsSync(full)) {
        continue;
      }
      let servers: ServerEntry[];
      try {
        servers = listServers(fs.readFileSync(full, 'utf8'));
      } catch (error) {
        void vscode.window.showWarningMessage(`Root Guard: ${full}: ${(error as Error).message}`);
        continue;
      }
      for (const server of servers.filter((s) => s.confinement === 'unconfined')) {
        picks.push({
          label: server.name,
          description: `${file.relative} · ${path.basename(folder)}`,
          detail: commandLine(server.entry),
          file: full,
          key: server.key,
          name: server.name,
          entry: server.entry,
          root: file.root,
        });
      }
    }
  }
  if (picks.length === 0) {
    void vscode.window.showInformationMessage('Root Guard: every stdio MCP server in .vscode/mcp.json and .mcp.json already runs confined.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(picks, { title: 'Run which MCP server confined (rootguard run)?' });
  if (!pick) {
    return undefined;
  }
  const [program, ...prefix] = checkedLauncher(launcher);
  const replacement = confinedEntry(pick.entry, pick.root, program, prefix);
  const before = fs.readFileSync(pick.file, 'utf8');
  const after = rewriteServer(before, pick.key, pick.name, replacement);
  for (;;) {
    const choice = await vscode.window.showInformationMessage(
      `Run "${pick.name}" confined by rootguard run?`,
      {
        modal: true,
        detail: `${pick.file}\n\nBefore: ${commandLine(pick.entry)}\nAfter:  ${commandLine(replacement)}\n\n` +
          'The server then sees only the union (the store and shared configuration read-only); comments and formatting are kept.',
      },
      'Rewrite',
      'Show Diff',
    );
    if (choice === 'Show Diff') {
      const left = await vscode.workspace.openTextDocument({ content: before, language: 'jsonc' });
      const right = await vscode.workspace.openTextDocument({ content: after, language: 'jsonc' });
      await vscode.commands.executeCommand('vscode.diff', left.uri, right.uri, `${path.basename(pick.file)}: before ↔ after (Run MCP Server Confined)`);
      continue;
    }
    if (choice !== 'Rewrite') {
      return undefined;
    }
    if (fs.readFileSync(pick.file, 'utf8') !== before) {
      throw new Error(`${pick.file} changed since the preview; run the command again`);
    }
    fs.writeFileSync(pick.file, after, 'utf8');
    void vscode.window.showInformationMessage(`Root Guard: "${pick.name}" now runs under rootguard run; restart it from the MCP view.`);
    return after;
  }
}
