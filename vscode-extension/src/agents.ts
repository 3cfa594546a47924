/**
 * "Root Guard: Guard Agents…": the agents present for this window's folders
 * (`rootguard agents status --json`), a pick of the unguarded ones, then
 * `rootguard agents install AGENT` for each — the same result as the command line
 * (docs/agents.md), run by the same installation as the language server. The pure
 * parts (`agentsCommandLine`, `parseAgents`, `guardSummary`) are tested without VS Code.
 */
import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { CommandLine, CLI_MODULE, isRootguardScript, LAUNCHER, SERVER_MODULE } from './serverCommand';

export const GUARD_AGENTS_COMMAND = 'rootguard.guardAgents';
const TIMEOUT_MS = 120_000;

/** One agent as `rootguard agents status --json` reports it. */
export interface AgentState {
  agent: string;
  label: string;
  present: boolean;
  config_dirs: string[];
  guarded: boolean;
  hooks: string[];
  note: string;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GuardAgentsDeps {
  serverCommand(): Promise<CommandLine>;
  rootguardOnPath(): string | null;
  folders(): string[];
  log(message: string): void;
  showLog(): void;
  run?(line: CommandLine): Promise<RunResult>;
}

function basename(file: string): string {
  return file.split(/[\\/]/).pop() ?? '';
}

/** `rootguard ARGS` from the installation that runs the language server (as `mcpCommand` does). */
export function agentsCommandLine(server: CommandLine, args: readonly string[], rootguardOnPath?: string | null): CommandLine {
  const all = [server.command, ...server.args];
  const launcher = all.findIndex((part, index) => index > 0 && basename(part) === LAUNCHER && all[index + 1] === SERVER_MODULE);
  if (launcher > 0) {
    if (rootguardOnPath) {
      return { command: rootguardOnPath, args: [...args] };
    }
    return { command: server.command, args: [...all.slice(1, launcher + 1), CLI_MODULE, ...args] };
  }
  const m = all.indexOf('-m');
  if (m > 0 && all[m + 1] === SERVER_MODULE) {
    return { command: server.command, args: [...all.slice(1, m), '-m', CLI_MODULE, ...args] };
  }
  if (isRootguardScript(server.command)) {
    return { command: server.command, args: [...args] };
  }
  return { command: rootguardOnPath || 'rootguard', args: [...args] };
}

/** The agents of a `rootguard agents status --json` output; throws on anything else. */
export function parseAgents(stdout: string): AgentState[] {
  const data = JSON.parse(stdout) as { agents?: unknown };
  if (!data || !Array.isArray(data.agents)) {
    throw new Error('`rootguard agents status --json` printed no agents list');
  }
  return data.agents.filter((a): a is AgentState => !!a && typeof a === 'object' && typeof (a as AgentState).agent === 'string');
}

/** One line a person reads whole, after installing. */
export function guardSummary(after: readonly AgentState[], failed: readonly string[]): string {
  const present = after.filter((a) => a.present);
  const guarded = present.filter((a) => a.guarded).map((a) => a.label);
  const waiting = present.filter((a) => !a.guarded).map((a) => `${a.label} (${a.note || 'no hook'})`);
  const parts: string[] = [];
  if (guarded.length) {
    parts.push(`guarded: ${guarded.join(', ')}`);
  }
  if (waiting.length) {
    parts.push(`not guarded yet: ${waiting.join('; ')}`);
  }
  if (failed.length) {
    parts.push(`install failed for ${failed.join(', ')} (see the log)`);
  }
  return `Root Guard: ${parts.join('. ') || 'no agent found for these folders'}.`;
}

function runLine(line: CommandLine): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(line.command, line.args, { timeout: TIMEOUT_MS, windowsHide: true, maxBuffer: 8 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as NodeJS.ErrnoException).code === 'number' ? Number((error as NodeJS.ErrnoException).code) : 2) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr || (error && !stdout ? error.message : '')) });
    });
  });
}

/** The command itself: status, pick, install, status again. */
export async function guardAgents(deps: GuardAgentsDeps): Promise<void> {
  const folders = deps.folders();
  if (folders.length === 0) {
    void vscode.window.showWarningMessage('Root Guard: open a folder first: agents are found in the window\'s folders.');
    return;
  }
  const run = deps.run ?? runLine;
  const server = await deps.serverCommand();
  const cli = (args: string[]) => agentsCommandLine(server, args, deps.rootguardOnPath());
  const statusArgs = ['agents', 'status', '--json', ...folders.flatMap((f) => ['--folder', f])];
  const status = async (): Promise<AgentState[]> => {
    const line = cli(statusArgs);
    const done = await run(line);
    if (done.code !== 0 && done.code !== 1) {
      throw new Error(`${[line.command, ...line.args].join(' ')} failed: ${done.stderr.trim() || `exit ${done.code}`}`);
    }
    return parseAgents(done.stdout);
  };
  const before = await status();
  const unguarded = before.filter((a) => a.present && !a.guarded);
  if (unguarded.length === 0) {
    void vscode.window.showInformationMessage(guardSummary(before, []));
    return;
  }
  const items = unguarded.map((a) => ({
    label: a.label, description: a.config_dirs.join(', '), detail: a.note || 'no Root Guard hook', picked: true, agent: a.agent,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Root Guard: guard these agents (their pre-tool hook, in your user settings)', canPickMany: true,
  }) as Array<{ agent: string; label: string }> | undefined;
  if (!picked || picked.length === 0) {
    return;
  }
  const failed: string[] = [];
  for (const item of picked) {
    const line = cli(['agents', 'install', item.agent]);
    deps.log(`${[line.command, ...line.args].join(' ')}`);
    const done = await run(line);
    deps.log(done.stdout.trimEnd());
    if (done.code !== 0) {
      deps.log(done.stderr.trimEnd());
      failed.push(item.label);
    }
  }
  const message = guardSummary(await status(), failed);
  const action = await vscode.window.showInformationMessage(message, 'Show Log');
  if (action === 'Show Log') {
    deps.showLog();
  }
}

/** The minimal registration `extension.ts` makes. */
export function registerGuardAgents(deps: GuardAgentsDeps): vscode.Disposable {
  return vscode.commands.registerCommand(GUARD_AGENTS_COMMAND, async () => {
    try {
      await guardAgents(deps);
    } catch (error) {
      void vscode.window.showErrorMessage(`Root Guard: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
}
