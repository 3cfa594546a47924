/** Root Guard for VS Code: wiring only; the logic lives in the other modules. */
import { execFile, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { registerGuardAgents } from './agents';
import { COMMANDS, EXECUTE_COMMAND_REQUEST, registerCommands } from './commands';
import { registerMcpProvider } from './mcp';
import { ReportView } from './reportView';
import { isExecutableFile, ServerController } from './server';
import { CommandLine, findOnPath } from './serverCommand';
import { StatusBar } from './statusBar';
import { lastLines, startTray, traySocketCandidates } from './tray';
import { SERVER_ACKNOWLEDGE_COMMAND } from './widening';
import { WideningNotifier } from './wideningNotifier';

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Root Guard', { log: true });
  const statusBar = new StatusBar();
  const report = new ReportView({
    acknowledge: () => notifier.acknowledge(),
    withdraw: async () => vscode.commands.executeCommand(COMMANDS.withdrawAcknowledgement),
  });
  controller = new ServerController(log, bundledLauncher(context.extensionPath));
  const server = controller;
  const folderCount = () => vscode.workspace.workspaceFolders?.length ?? 0;
  const trayLog = path.join(context.logUri?.fsPath ?? os.tmpdir(), 'tray.log');
  context.subscriptions.push(log, statusBar, report, server);

  const notifier = new WideningNotifier({
    status: () => server.status,
    showReport: async () => vscode.commands.executeCommand(COMMANDS.showWideningReport),
    acknowledge: () => server.request(EXECUTE_COMMAND_REQUEST, { command: SERVER_ACKNOWLEDGE_COMMAND, arguments: [] }),
    log: (message) => log.info(message),
  });
  server.onWideningWarning((message) => notifier.fromServer(message));
  const refresh = () => {
    statusBar.show(server.current, folderCount());
    if (server.status) {
      void report.update(server.status);
    }
    notifier.onStatus(server.status);
  };
  context.subscriptions.push(server.onDidChangeState(refresh), vscode.workspace.onDidChangeWorkspaceFolders(refresh));

  context.subscriptions.push(
    ...registerCommands({
      status: () => server.status,
      request: (method, params) => server.request(method, params),
      restart: () => server.restart(),
      showLog: () => log.show(true),
      serverCommand: () => server.command(),
      showReport: (status) => report.show(status),
      startTray: async (line) => {
        log.info(`Starting the tray: ${[line.command, ...line.args].join(' ')} (output in ${trayLog})`);
        const result = await startTray(line, { logFile: trayLog, sockets: traySocketCandidates(process.env, process.platform, uid(), os.homedir()) });
        log.info(`Tray: ${JSON.stringify(result)}`);
        return result;
      },
      trayLog: () => trayLog,
      installedTray: () => {
        const script = path.join(trayEnvironment(context), 'bin', 'rootguard');
        return fs.existsSync(script) ? { command: script, args: ['tray'] } : null;
      },
      installTray: async () => installTray(context, await server.command(), log),
      rootguardOnPath: () => onPath('rootguard'),
      acknowledge: () => notifier.acknowledge(),
      // The server says where the user file is (it knows ROOTGUARD_CONFIG and platformdirs).
      userConfigFile: () => existing(server.status?.config.user ?? undefined),
    }),
  );

  context.subscriptions.push(registerGuardAgents({
    serverCommand: () => server.command(), rootguardOnPath: () => onPath('rootguard'), showLog: () => log.show(true),
    folders: () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), log: (message) => log.info(message),
  }));

  const version = String(context.extension?.packageJSON?.version ?? '0.0.0');
  const mcpChecks = new Map<string, Promise<string | null>>();
  const cannotStart = (line: CommandLine) => {
    const launcher = line.args.findIndex((a) => a.endsWith(`${path.sep}launch.py`));
    if (launcher < 0) {
      return Promise.resolve(null); // an installed rootguard: its own install has the SDK
    }
    const probe = [line.command, ...line.args.slice(0, launcher + 1), '--can-serve-mcp'];
    const key = probe.join('\0');
    if (!mcpChecks.has(key)) {
      mcpChecks.set(key, new Promise((resolve) => {
        execFile(probe[0], probe.slice(1), { timeout: 60_000 }, (error, stdout) => {
          resolve(error ? (String(stdout).trim() || error.message) : null);
        });
      }));
    }
    return mcpChecks.get(key)!;
  };
  if (!registerMcpProvider(() => server.command(), version, context.subscriptions, () => onPath('rootguard'), cannotStart, (m) => log.info(m))) {
    log.info('This VS Code has no MCP server definition provider API; the guarded MCP server is not offered.');
  }
  await server.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

/** The tray's private environment: under the extension's global storage, never a system or user site. */
function trayEnvironment(context: vscode.ExtensionContext): string {
  return path.join(context.globalStorageUri?.fsPath ?? path.join(os.homedir(), '.rootguard-vscode'), 'tray-env');
}

/**
 * Runs `bundled/tool/install_tray.py` (a venv with PySide6 and the Root Guard wheel the .vsix carries)
 * with the server's Python; its output goes to the log. Resolves to the tray's command line, or rejects
 * with the installer's last words.
 */
function installTray(context: vscode.ExtensionContext, server: CommandLine, log: vscode.LogOutputChannel): Promise<CommandLine> {
  const installer = path.join(context.extensionPath, 'bundled', 'tool', 'install_tray.py');
  const launcher = server.args.findIndex((a) => a.endsWith(`${path.sep}launch.py`));
  if (launcher < 0 || !fs.existsSync(installer)) {
    return Promise.reject(new Error('this extension build carries no tray installer (a development build: pip install ".[tray]" in the source folder)'));
  }
  const argv = [...server.args.slice(0, launcher), installer, trayEnvironment(context)];
  log.info(`Installing the tray: ${server.command} ${argv.join(' ')}`);
  return new Promise((resolve, reject) => {
    let tail = '';
    const child = spawn(server.command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      log.info(text.trimEnd());
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', (error) => reject(error));
    child.once('exit', (code) => {
      const match = /^tray command: (.+) tray$/m.exec(tail);
      if (code === 0 && match) {
        resolve({ command: match[1], args: ['tray'] });
      } else {
        reject(new Error(`the tray install failed (exit ${code}): ${lastLines(tail)}`));
      }
    });
  });
}

function existing(file: string | undefined): string | undefined {
  return file && fs.existsSync(file) ? file : undefined;
}

/** `bundled/tool/launch.py` when the extension carries the server (a packaged .vsix), else null. */
export function bundledLauncher(extensionPath: string): string | null {
  const launcher = path.join(extensionPath, 'bundled', 'tool', 'launch.py');
  const server = path.join(extensionPath, 'bundled', 'libs', 'lsp_bridge', '__init__.py');
  return fs.existsSync(launcher) && fs.existsSync(server) ? launcher : null;
}

function onPath(name: string): string | null {
  return findOnPath(name, process.env.PATH, process.platform, isExecutableFile, process.env.PATHEXT);
}

function uid(): number {
  return typeof process.getuid === 'function' ? process.getuid() : -1;
}
