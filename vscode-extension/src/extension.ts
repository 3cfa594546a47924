/** Root Guard for VS Code: wiring only; the logic lives in the other modules. */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { registerGuardAgents } from './agents';
import { COMMANDS, EXECUTE_COMMAND_REQUEST, registerCommands } from './commands';
import { registerMcpProvider } from './mcp';
import { ReportView } from './reportView';
import { isExecutableFile, ServerController } from './server';
import { findOnPath } from './serverCommand';
import { StatusBar } from './statusBar';
import { startTray, traySocketCandidates } from './tray';
import { SERVER_ACKNOWLEDGE_COMMAND } from './widening';
import { WideningNotifier } from './wideningNotifier';

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Root Guard', { log: true });
  const statusBar = new StatusBar();
  const report = new ReportView();
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
      rootguardOnPath: () => onPath('rootguard'),
      pipxOnPath: () => onPath('pipx') !== null,
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
  if (!registerMcpProvider(() => server.command(), version, context.subscriptions, () => onPath('rootguard'))) {
    log.info('This VS Code has no MCP server definition provider API; the guarded MCP server is not offered.');
  }
  await server.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
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
