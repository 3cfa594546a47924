/**
 * Offers the guarded MCP file server to VS Code's agent: `rootguard mcp` with
 * one `--root` per workspace folder, through the MCP server definition
 * provider API when this VS Code has it (feature-detected: final in VS Code
 * 1.101 with `contributes.mcpServerDefinitionProviders`; VS Code 1.100, as in
 * code-server 4.100, read the same id from `contributes.modelContextServerCollections`).
 */
import * as os from 'os';
import * as vscode from 'vscode';
import { foldersTag, localFolderPath, localHosts } from './folders';
import { CommandLine, mcpCommand } from './serverCommand';

export const MCP_PROVIDER_ID = 'rootguard.mcp';
export const MCP_LABEL = 'Root Guard guarded files';

/* eslint-disable @typescript-eslint/no-explicit-any */
/** Registers the provider; returns false when this VS Code has no such API. */
export function registerMcpProvider(
  serverCommand: () => Promise<CommandLine>,
  version: string,
  subscriptions: vscode.Disposable[],
  rootguardOnPath: () => string | null = () => null,
  /** Null when `line` can start (its MCP SDK loads), else why not; asked before the definition is offered. */
  cannotStart: (line: CommandLine) => Promise<string | null> = async () => null,
  log: (message: string) => void = () => undefined,
): boolean {
  const api = vscode as any;
  const register = api.lm?.registerMcpServerDefinitionProvider;
  const Definition = api.McpStdioServerDefinition;
  if (typeof register !== 'function' || typeof Definition !== 'function') {
    return false;
  }
  const changed = new vscode.EventEmitter<void>();
  let warned = false;
  let registration: vscode.Disposable;
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: async () => {
      const folders = windowFolders();
      const enabled = vscode.workspace.getConfiguration('rootguard').get<boolean>('mcp.enabled', true);
      if (!enabled || folders.length === 0) {
        return [];
      }
      let server: CommandLine;
      try {
        server = await serverCommand();
      } catch {
        return []; // no interpreter: the server's own notification says what to install
      }
      const line = mcpCommand(server, folders, rootguardOnPath());
      const why = await cannotStart(line);
      if (why) {
        log(`The guarded MCP server is not offered: ${why}`);
        if (!warned) {
          warned = true;
          void vscode.window.showInformationMessage(`Root Guard: the guarded MCP server is not offered: ${why}`);
        }
        return [];
      }
      // A new folder list is a new version, so VS Code restarts the server with the new --root set.
      return [new Definition(MCP_LABEL, line.command, line.args, {}, `${version}+${foldersTag(folders)}`)];
    },
  };
  try {
    registration = register.call(api.lm, MCP_PROVIDER_ID, provider);
  } catch {
    changed.dispose(); // e.g. a proposed API this VS Code does not grant
    return false;
  }
  subscriptions.push(
    changed,
    registration,
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (['rootguard.mcp.enabled', 'rootguard.serverCommand', 'rootguard.python'].some((key) => event.affectsConfiguration(key))) {
        changed.fire();
      }
    }),
  );
  return true;
}

/** The window's folders as local paths (`file:`, and `vscode-remote:` on this machine). */
export function windowFolders(): string[] {
  // VS Code's remote name is the whole authority when it has no `+` (code-server's `host:port`)
  const remoteAuthority = vscode.env.remoteName ?? null;
  const hosts = localHosts(os.hostname(), remoteAuthority);
  return (vscode.workspace.workspaceFolders ?? [])
    .map((f) => localFolderPath(f.uri, hosts, remoteAuthority))
    .filter((p): p is string => p !== null);
}
