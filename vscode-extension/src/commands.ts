/** The Root Guard commands, wired to the server through a small interface. */
import * as path from 'path';
import * as vscode from 'vscode';
import { confineMcpServer } from './confine';
import { runCli, traceCommand } from './trace';
import { cliLauncher, CommandLine, trayCommand } from './serverCommand';
import { describeTrayResult, TrayResult } from './tray';
import { Decision, ExplainResult, Inventory, Status } from './types';

export const COMMANDS = {
  showEffectiveRoots: 'rootguard.showEffectiveRoots',
  showWideningReport: 'rootguard.showWideningReport',
  explainAccess: 'rootguard.explainAccess',
  migrateConfig: 'rootguard.migrateConfigToV2',
  startTray: 'rootguard.startTray',
  acknowledgeWidening: 'rootguard.acknowledgeWidening',
  restartServer: 'rootguard.restartServer',
  showLog: 'rootguard.showLog',
  confineMcpServer: 'rootguard.confineMcpServer',
  traceCommand: 'rootguard.traceCommand',
  withdrawAcknowledgement: 'rootguard.withdrawWideningAcknowledgement',
} as const;

/** The server's `workspace/executeCommand` that takes the acknowledgement back. */
export const SERVER_WITHDRAW_COMMAND = 'rootguard.withdrawAcknowledgement';

/** The server-side command the language server executes. */
export const SERVER_MIGRATE_COMMAND = 'rootguard.migrateConfig';
export const EXPLAIN_REQUEST = 'rootguard/explain';
export const INVENTORY_REQUEST = 'rootguard/inventory';
export const EXECUTE_COMMAND_REQUEST = 'workspace/executeCommand';

/** What the commands need from the rest of the extension. */
export interface CommandDeps {
  status(): Status | null;
  request<R>(method: string, params: unknown): Promise<R>;
  restart(): Promise<void>;
  showLog(): void;
  serverCommand(): Promise<CommandLine>;
  showReport(status: Status): Promise<void>;
  /** Starts the tray detached and reports what happened to it. */
  startTray(line: CommandLine): Promise<TrayResult>;
  /** The tray's log file (its stdout and stderr). */
  trayLog(): string;
  /** The tray installed by Install Tray (the extension's own environment), when it is there. */
  installedTray(): CommandLine | null;
  /** Installs the tray into the extension's own environment; resolves to its command line. */
  installTray(): Promise<CommandLine>;
  /** The `rootguard` console script when it is on PATH. */
  rootguardOnPath(): string | null;
  /** Records the current union as accepted (the server's `rootguard.acknowledge`). */
  acknowledge(): Promise<void>;
  /** Where the user configuration file is, or undefined when it does not exist. */
  userConfigFile(): string | undefined;
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  // VS Code hands a command whatever its caller passed: each handler declares what it accepts.
  const register = <A extends unknown[]>(id: string, run: (...args: A) => Promise<unknown> | unknown) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await run(...(args as A));
      } catch (error) {
        void vscode.window.showErrorMessage(`Root Guard: ${error instanceof Error ? error.message : String(error)}`);
        return undefined;
      }
    });
  return [
    register(COMMANDS.showEffectiveRoots, () => showEffectiveRoots(deps)),
    register(COMMANDS.showWideningReport, () => showWideningReport(deps)),
    register(COMMANDS.explainAccess, (uri?: vscode.Uri) => explainAccess(deps, uri)),
    register(COMMANDS.migrateConfig, (uri?: vscode.Uri) => migrateConfig(deps, uri)),
    register(COMMANDS.startTray, () => startTray(deps)),
    register(COMMANDS.acknowledgeWidening, () => deps.acknowledge()),
    register(COMMANDS.withdrawAcknowledgement, () => withdrawAcknowledgement(deps)),
    register(COMMANDS.restartServer, () => deps.restart()),
    register(COMMANDS.showLog, () => deps.showLog()),
    register(COMMANDS.confineMcpServer, async () => confineMcpServer(cliLauncher(await deps.serverCommand(), deps.rootguardOnPath()))),
    register(COMMANDS.traceCommand, async (text?: string) => {
      const launcher = cliLauncher(await deps.serverCommand(), deps.rootguardOnPath());
      return traceCommand({ request: deps.request, runCli: (args, stdin) => runCli(launcher, args, stdin) }, text);
    }),
  ];
}

function requireStatus(deps: CommandDeps): Status | undefined {
  const status = deps.status();
  if (!status) {
    void vscode.window.showWarningMessage('Root Guard: the server has not reported the roots yet.', 'Open Log').then((choice) => {
      if (choice) {
        deps.showLog();
      }
    });
  }
  return status ?? undefined;
}

interface PathItem extends vscode.QuickPickItem {
  path?: string;
}

/** Quick pick items: the union entries with their reasons, then the shadowed ones. */
export function rootItems(status: Status): PathItem[] {
  const entries = status.entries && status.entries.length > 0
    ? status.entries
    : status.union.map((p) => ({ path: p, origin: '', reason: '' }));
  const items: PathItem[] = entries.map((e) => ({
    label: `${originIcon(e.origin)} ${e.path}`,
    description: e.origin || undefined,
    detail: e.reason || undefined,
    path: e.path,
  }));
  const shadowed = status.shadowed ?? [];
  if (shadowed.length > 0) {
    items.push({ label: 'Shadowed (inside another entry)', kind: vscode.QuickPickItemKind.Separator });
    for (const s of shadowed) {
      items.push({ label: `$(eye-closed) ${s.path}`, description: 'shadowed', detail: `inside ${s.by}`, path: s.path });
    }
  }
  return items;
}

function originIcon(origin: string): string {
  switch (origin) {
    case 'folder': return '$(root-folder)';
    case 'worktree': return '$(git-branch)';
    case 'config': return '$(gear)';
    case 'environment': return '$(terminal)';
    case 'temp': return '$(clock)';
    case 'any-path': return '$(warning)';
    case 'git': return '$(git-commit)';
    default: return '$(folder)';
  }
}

async function showEffectiveRoots(deps: CommandDeps): Promise<void> {
  const status = requireStatus(deps);
  if (!status) {
    return;
  }
  const items = rootItems(status);
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Root Guard: effective roots',
    placeHolder: `${status.union.length} ${status.union.length === 1 ? 'entry' : 'entries'} in the union — pick one to copy its path`,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (picked?.path) {
    await vscode.env.clipboard.writeText(picked.path);
  }
}

async function showWideningReport(deps: CommandDeps): Promise<void> {
  const status = requireStatus(deps);
  if (!status) {
    return;
  }
  let shown = status;
  if (!status.inventory && !status.inventory_pending) {
    try {
      const inventory = await deps.request<Inventory | null>(INVENTORY_REQUEST, {});
      shown = { ...status, inventory };
    } catch {
      // the report still shows the union and mounts
    }
  }
  await deps.showReport(shown);
}

const DECISION_ICONS: Record<string, string> = { allow: '$(pass)', request: '$(question)', deny: '$(circle-slash)' };

/** Quick pick items: one per operation with its decision, winning rule and reason. */
export function explainItems(result: ExplainResult): vscode.QuickPickItem[] {
  return result.decisions.map((d: Decision) => ({
    label: `${DECISION_ICONS[d.decision] ?? '$(circle-outline)'} ${d.op}: ${d.decision}`,
    description: d.rule ? `rule ${d.rule}` : 'no rule (baseline)',
    detail: d.reason,
  }));
}

async function explainAccess(deps: CommandDeps, uri?: vscode.Uri): Promise<void> {
  const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
  if (!target) {
    void vscode.window.showInformationMessage('Root Guard: open a file (or pick one in the Explorer) to explain access to it.');
    return;
  }
  if (target.scheme !== 'file') {
    void vscode.window.showInformationMessage(`Root Guard: ${target.scheme}: documents are not files on disk; agents reach files only.`);
    return;
  }
  const result = await deps.request<ExplainResult | { error: string }>(EXPLAIN_REQUEST, { path: target.toString(), op: null });
  if (!result || 'error' in result || !Array.isArray(result.decisions)) {
    const reason = result && 'error' in result ? result.error : 'no answer';
    void vscode.window.showWarningMessage(`Root Guard: cannot explain access to ${path.basename(target.fsPath)}: ${reason}`);
    return;
  }
  await vscode.window.showQuickPick(explainItems(result), {
    title: `Root Guard: access to ${path.basename(result.path)}`,
    placeHolder: result.path,
    matchOnDetail: true,
  });
}

/** True for a Root Guard configuration file name. */
export function isConfigFile(file: string): boolean {
  const base = path.basename(file);
  return base === '.rootguard.toml' || (base === 'config.toml' && path.basename(path.dirname(file)) === 'rootguard');
}

async function configCandidates(deps: CommandDeps, uri?: vscode.Uri): Promise<vscode.Uri[]> {
  if (uri instanceof vscode.Uri) {
    return [uri];
  }
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active && active.scheme === 'file' && isConfigFile(active.fsPath)) {
    return [active];
  }
  const found = await vscode.workspace.findFiles('**/.rootguard.toml', '**/node_modules/**', 50);
  const user = deps.userConfigFile();
  const all = [...found, ...(user ? [vscode.Uri.file(user)] : [])];
  const seen = new Set<string>();
  return all.filter((u) => !seen.has(u.toString()) && seen.add(u.toString()));
}

async function migrateConfig(deps: CommandDeps, uri?: vscode.Uri): Promise<void> {
  const candidates = await configCandidates(deps, uri);
  if (candidates.length === 0) {
    void vscode.window.showInformationMessage('Root Guard: no .rootguard.toml in this workspace and no user configuration file.');
    return;
  }
  let target: vscode.Uri | undefined = candidates[0];
  if (candidates.length > 1) {
    const picked = await vscode.window.showQuickPick(
      candidates.map((c) => ({ label: vscode.workspace.asRelativePath(c, true), description: c.fsPath, uri: c })),
      { title: 'Root Guard: migrate which configuration to version 2?' },
    );
    target = picked?.uri;
  }
  if (!target) {
    return;
  }
  const result = await deps.request<{ applied?: boolean; reason?: string } | null>(
    EXECUTE_COMMAND_REQUEST,
    { command: SERVER_MIGRATE_COMMAND, arguments: [target.toString()] },
  );
  const name = vscode.workspace.asRelativePath(target, false);
  if (result && result.applied === false) {
    void vscode.window.showInformationMessage(`Root Guard: ${name} was not migrated: ${result.reason ?? 'nothing to change'}.`);
    return;
  }
  void vscode.window.showInformationMessage(`Root Guard: ${name} migrated to version 2. Review the change and save it.`);
}

async function withdrawAcknowledgement(deps: CommandDeps): Promise<void> {
  const result = await deps.request<{ withdrawn?: boolean; reason?: string } | null>(
    EXECUTE_COMMAND_REQUEST,
    { command: SERVER_WITHDRAW_COMMAND, arguments: [] },
  );
  if (result?.withdrawn) {
    void vscode.window.showInformationMessage('Root Guard: the acknowledgement is withdrawn; this window warns again until you acknowledge.');
  } else {
    void vscode.window.showInformationMessage(`Root Guard: nothing withdrawn: ${result?.reason ?? 'no answer'}.`);
  }
}

async function startTray(deps: CommandDeps): Promise<void> {
  const line = trayCommand(await deps.serverCommand(), deps.rootguardOnPath()) ?? deps.installedTray();
  if (!line) {
    await offerTrayInstall(deps, 'Root Guard: the tray is not installed');
    return;
  }
  await startAndReport(deps, line);
}

/** Starts the tray and tells what really happened (running, or its own last words). */
async function startAndReport(deps: CommandDeps, line: CommandLine): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Root Guard: starting the tray…' },
    () => deps.startTray(line),
  );
  const message = describeTrayResult(line, result);
  const buttons = [...(message.offerInstall ? [INSTALL_TRAY] : []), ...(message.offerLog ? [OPEN_TRAY_LOG] : [])];
  const show = message.level === 'error' ? vscode.window.showErrorMessage : vscode.window.showInformationMessage;
  const choice = await show(message.text, ...buttons);
  if (choice === INSTALL_TRAY) {
    await installAndStart(deps);
  } else if (choice === OPEN_TRAY_LOG) {
    await vscode.window.showTextDocument(vscode.Uri.file(deps.trayLog()), { preview: true });
  }
}

export const INSTALL_TRAY = 'Install Tray…';
export const OPEN_TRAY_LOG = 'Open Tray Log';

/**
 * The tray is not installed: offer to install it into the extension's own environment (a venv under
 * its global storage with PySide6-Essentials from PyPI and the Root Guard wheel the .vsix carries;
 * never a package index's `rootguard`), then start it and report the real outcome.
 */
async function offerTrayInstall(deps: CommandDeps, lead: string): Promise<void> {
  const choice = await vscode.window.showInformationMessage(
    `${lead}. Install it into the extension's own environment (PySide6-Essentials from PyPI and the Root Guard wheel this extension carries, about 100 MB)?`,
    INSTALL_TRAY,
  );
  if (choice === INSTALL_TRAY) {
    await installAndStart(deps);
  }
}

async function installAndStart(deps: CommandDeps): Promise<void> {
  let line: CommandLine;
  try {
    line = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Root Guard: installing the tray (PySide6 and Root Guard)…' },
      () => deps.installTray(),
    );
  } catch (error) {
    const choice = await vscode.window.showErrorMessage(`Root Guard: ${error instanceof Error ? error.message : String(error)}`, 'Open Log');
    if (choice) {
      deps.showLog();
    }
    return;
  }
  await startAndReport(deps, line);
}
