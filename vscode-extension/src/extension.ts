/** Root Guard for VS Code: wiring only; the logic lives in the other modules. */
import * as child_process from 'child_process';
import * as fs from 'fs';
import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { registerMcpProvider } from './mcp';
import { ReportView } from './reportView';
import { ServerController } from './server';
import { CommandLine } from './serverCommand';
import { StatusBar } from './statusBar';

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Root Guard', { log: true });
  const statusBar = new StatusBar();
  const report = new ReportView();
  controller = new ServerController(log);
  const server = controller;
  const folderCount = () => vscode.workspace.workspaceFolders?.length ?? 0;
  context.subscriptions.push(log, statusBar, report, server);

  const refresh = () => {
    statusBar.show(server.current, folderCount());
    if (server.status) {
      void report.update(server.status);
    }
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
      spawnDetached: (line) => spawnDetached(line, log),
      // The server says where the user file is (it knows ROOTGUARD_CONFIG and platformdirs).
      userConfigFile: () => existing(server.status?.config.user ?? undefined),
    }),
  );

  const version = String(context.extension?.packageJSON?.version ?? '0.0.0');
  if (!registerMcpProvider(() => server.command(), version, context.subscriptions)) {
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

/** Spawns a program that outlives the editor; resolves once it started, rejects if it could not. */
function spawnDetached(line: CommandLine, log: vscode.LogOutputChannel): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = child_process.spawn(line.command, line.args, { detached: true, stdio: 'ignore', env: process.env });
    child.once('error', (error) => {
      log.error(`Could not start ${line.command}: ${error.message}`);
      reject(new Error(`could not start ${line.command}: ${error.message}`));
    });
    child.once('spawn', () => {
      log.info(`Started ${[line.command, ...line.args].join(' ')} (pid ${child.pid})`);
      child.unref();
      resolve();
    });
  });
}
