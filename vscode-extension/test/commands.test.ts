import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { CommandDeps, COMMANDS, explainItems, isConfigFile, registerCommands, rootItems } from '../src/commands';
import { CommandLine } from '../src/serverCommand';
import { TrayResult } from '../src/tray';
import { LOG_COMMAND, REPORT_COMMAND } from '../src/status';
import { Status } from '../src/types';
import { GUARD_AGENTS_COMMAND } from '../src/agents';
import { stub, Uri } from './stubs/vscode';
import { NARROW, normalStatus, REPO, widenedStatus } from './handmade';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

/** Records what the commands ask of the rest of the extension. */
class FakeDeps implements CommandDeps {
  current: Status | null = normalStatus();
  requests: Array<{ method: string; params: any }> = [];
  responses = new Map<string, unknown>();
  spawned: CommandLine[] = [];
  reports: Status[] = [];
  restarts = 0;
  logsShown = 0;
  server: CommandLine = { command: '/venv/bin/python', args: ['-m', 'lsp_bridge'] };
  userFile: string | undefined;

  status = () => this.current;
  request = async <R>(method: string, params: unknown): Promise<R> => {
    this.requests.push({ method, params });
    if (!this.responses.has(method)) {
      throw new Error('the Root Guard server is not running');
    }
    return this.responses.get(method) as R;
  };
  restart = async () => {
    this.restarts += 1;
  };
  showLog = () => {
    this.logsShown += 1;
  };
  serverCommand = async () => this.server;
  showReport = async (status: Status) => {
    this.reports.push(status);
  };
  trayResult: TrayResult = { kind: 'running', pid: 42 };
  onPath: string | null = null;
  installed: CommandLine | null = null;
  installs = 0;
  installOutcome: CommandLine | Error = { command: '/storage/tray-env/bin/rootguard', args: ['tray'] };
  installedTray = () => this.installed;
  installTray = async (): Promise<CommandLine> => {
    this.installs += 1;
    if (this.installOutcome instanceof Error) {
      throw this.installOutcome;
    }
    this.installed = this.installOutcome;
    return this.installOutcome;
  };
  acknowledged = 0;
  startTray = async (line: CommandLine): Promise<TrayResult> => {
    this.spawned.push(line);
    return this.trayResult;
  };
  trayLog = () => '/tmp/rootguard-tray.log';
  rootguardOnPath = () => this.onPath;
  acknowledge = async () => {
    this.acknowledged += 1;
  };
  userConfigFile = () => this.userFile;
}

describe('commands', () => {
  let deps: FakeDeps;
  let disposables: vscode.Disposable[];
  beforeEach(() => {
    stub.reset();
    deps = new FakeDeps();
    disposables = registerCommands(deps);
  });
  afterEach(() => disposables.forEach((d) => d.dispose()));

  it('registers exactly the commands package.json contributes', () => {
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command)
      .filter((c: string) => c !== GUARD_AGENTS_COMMAND).sort(); // registered on its own (src/agents.ts)
    assert.deepStrictEqual([...stub.commands.keys()].sort(), contributed);
    assert.deepStrictEqual(Object.values(COMMANDS).sort(), contributed);
  });

  it('makes the status bar clicks land on registered commands', () => {
    assert.ok(stub.commands.has(REPORT_COMMAND));
    assert.ok(stub.commands.has(LOG_COMMAND));
  });

  it('gives every contributed command a title in the Root Guard category', () => {
    for (const c of manifest.contributes.commands) {
      assert.strictEqual(c.category, 'Root Guard');
      assert.ok(c.title.length > 0);
    }
  });

  it('Show Effective Roots lists entries with reasons and shadowed ones, and copies the pick', async () => {
    deps.current = widenedStatus();
    stub.answer = (shown) => shown.items[0];
    await vscode.commands.executeCommand(COMMANDS.showEffectiveRoots);
    const pick = stub.shown[0];
    assert.strictEqual(pick.kind, 'quickPick');
    assert.deepStrictEqual(pick.items.map((i) => [i.label, i.description, i.detail]), [
      [`$(root-folder) ${REPO}`, 'folder', 'workspace folder'],
      ['Shadowed (inside another entry)', undefined, undefined],
      [`$(eye-closed) ${NARROW}`, 'shadowed', `inside ${REPO}`],
    ]);
    assert.strictEqual(pick.items[1].kind, vscode.QuickPickItemKind.Separator);
    assert.strictEqual(stub.clipboard, REPO);
  });

  it('Show Effective Roots says so before the first status', async () => {
    deps.current = null;
    await vscode.commands.executeCommand(COMMANDS.showEffectiveRoots);
    assert.strictEqual(stub.shown[0].kind, 'warning');
    assert.match(stub.shown[0].message, /has not reported the roots yet/);
  });

  it('Show Widening Report opens the report with the status inventory', async () => {
    deps.current = widenedStatus();
    await vscode.commands.executeCommand(COMMANDS.showWideningReport);
    assert.strictEqual(deps.reports.length, 1);
    assert.strictEqual(deps.reports[0].inventory?.files_after, 61000);
    assert.deepStrictEqual(deps.requests, []);
  });

  it('Show Widening Report asks the server for the last inventory when the status has none', async () => {
    const inventory = { ...widenedStatus().inventory! };
    deps.current = { ...widenedStatus(), inventory: null };
    deps.responses.set('rootguard/inventory', inventory);
    await vscode.commands.executeCommand(COMMANDS.showWideningReport);
    assert.deepStrictEqual(deps.requests, [{ method: 'rootguard/inventory', params: {} }]);
    assert.strictEqual(deps.reports[0].inventory?.files_before, 340);
  });

  it('Explain Access sends rootguard/explain for the active file and shows each decision', async () => {
    stub.activeFile = Uri.file(`${REPO}/.env`);
    deps.responses.set('rootguard/explain', {
      path: `${REPO}/.env`,
      decisions: [
        { op: 'read', decision: 'allow', rule: null, reason: 'inside the workspace folder' },
        { op: 'write', decision: 'request', rule: 'env-files', reason: 'matches .env*' },
        { op: 'delete', decision: 'deny', rule: 'env-files', reason: 'delete inherits write; config says deny' },
      ],
    });
    await vscode.commands.executeCommand(COMMANDS.explainAccess);
    assert.deepStrictEqual(deps.requests, [{ method: 'rootguard/explain', params: { path: `file://${REPO}/.env`, op: null } }]);
    const pick = stub.shown[0];
    assert.strictEqual(pick.options.title, 'Root Guard: access to .env');
    assert.deepStrictEqual(pick.items.map((i) => [i.label, i.description]), [
      ['$(pass) read: allow', 'no rule (baseline)'],
      ['$(question) write: request', 'rule env-files'],
      ['$(circle-slash) delete: deny', 'rule env-files'],
    ]);
  });

  it('Explain Access uses the Explorer selection when given one', async () => {
    deps.responses.set('rootguard/explain', { path: `${NARROW}/a.ts`, decisions: [] });
    await vscode.commands.executeCommand(COMMANDS.explainAccess, Uri.file(`${NARROW}/a.ts`));
    assert.strictEqual(deps.requests[0].params.path, `file://${NARROW}/a.ts`);
  });

  it('Explain Access shows the server refusal instead of a crash', async () => {
    stub.activeFile = Uri.file(`${REPO}/a`);
    deps.responses.set('rootguard/explain', { error: 'relative path' });
    await vscode.commands.executeCommand(COMMANDS.explainAccess);
    assert.deepStrictEqual(stub.shown.map((s) => [s.kind, s.message]), [['warning', 'Root Guard: cannot explain access to a: relative path']]);
  });

  it('Explain Access without a file says what to do', async () => {
    await vscode.commands.executeCommand(COMMANDS.explainAccess);
    assert.deepStrictEqual(deps.requests, []);
    assert.match(stub.shown[0].message, /open a file/);
  });

  it('shows one error when the server is not running', async () => {
    stub.activeFile = Uri.file(`${REPO}/a`);
    await vscode.commands.executeCommand(COMMANDS.explainAccess);
    assert.strictEqual(stub.shown.length, 1);
    assert.strictEqual(stub.shown[0].kind, 'error');
    assert.strictEqual(stub.shown[0].message, 'Root Guard: the Root Guard server is not running');
  });

  it('Migrate Config executes rootguard.migrateConfig on the server with the active .rootguard.toml', async () => {
    stub.activeFile = Uri.file(`${REPO}/.rootguard.toml`);
    deps.responses.set('workspace/executeCommand', null);
    await vscode.commands.executeCommand(COMMANDS.migrateConfig);
    assert.deepStrictEqual(deps.requests, [{
      method: 'workspace/executeCommand',
      params: { command: 'rootguard.migrateConfig', arguments: [`file://${REPO}/.rootguard.toml`] },
    }]);
    assert.match(stub.shown[0].message, /migrated to version 2/);
  });

  it('Migrate Config says why nothing changed', async () => {
    stub.activeFile = Uri.file(`${REPO}/.rootguard.toml`);
    deps.responses.set('workspace/executeCommand', { applied: false, reason: 'already version 2, invalid, or unreadable' });
    await vscode.commands.executeCommand(COMMANDS.migrateConfig);
    assert.match(stub.shown[0].message, /was not migrated: already version 2, invalid, or unreadable\.$/);
  });

  it('Migrate Config offers the workspace files and the user file when no config is active', async () => {
    stub.foundFiles = [Uri.file(`${NARROW}/.rootguard.toml`)];
    deps.userFile = '/Users/dev/.config/rootguard/config.toml';
    deps.responses.set('workspace/executeCommand', null);
    stub.answer = (shown) => (shown.kind === 'quickPick' ? shown.items[1] : undefined);
    await vscode.commands.executeCommand(COMMANDS.migrateConfig);
    assert.deepStrictEqual(stub.shown[0].items.map((i) => i.description), [`${NARROW}/.rootguard.toml`, '/Users/dev/.config/rootguard/config.toml']);
    assert.deepStrictEqual(deps.requests[0].params.arguments, ['file:///Users/dev/.config/rootguard/config.toml']);
  });

  it('Migrate Config does nothing when the pick is dismissed or there is no file', async () => {
    stub.foundFiles = [Uri.file('/a/.rootguard.toml'), Uri.file('/b/.rootguard.toml')];
    await vscode.commands.executeCommand(COMMANDS.migrateConfig);
    assert.deepStrictEqual(deps.requests, []);
    stub.foundFiles = [];
    await vscode.commands.executeCommand(COMMANDS.migrateConfig);
    assert.match(stub.shown[1].message, /no \.rootguard\.toml in this workspace/);
  });

  it('recognises configuration file names', () => {
    assert.ok(isConfigFile('/p/.rootguard.toml'));
    assert.ok(isConfigFile('/home/u/.config/rootguard/config.toml'));
    assert.ok(!isConfigFile('/p/config.toml'));
  });

  it('Start Tray spawns the tray with the server interpreter and says it runs', async () => {
    await vscode.commands.executeCommand(COMMANDS.startTray);
    assert.deepStrictEqual(deps.spawned, [{ command: '/venv/bin/python', args: ['-m', 'tray'] }]);
    assert.deepStrictEqual(stub.shown.map((s) => [s.kind, s.message]), [['info', 'Root Guard: the tray is running (pid 42).']]);
    deps.server = { command: '/usr/local/bin/rootguard', args: ['lsp'] };
    await vscode.commands.executeCommand(COMMANDS.startTray);
    assert.deepStrictEqual(deps.spawned[1], { command: '/usr/local/bin/rootguard', args: ['tray'] });
  });

  it("Start Tray shows the tray's own error when it exits at once, with its log a click away", async () => {
    deps.trayResult = { kind: 'exited', code: 1, signal: null, output: 'Traceback…\nrootguard tray: no graphical session (DISPLAY and WAYLAND_DISPLAY are unset)\n' };
    stub.answer = (shown) => shown.items.includes('Open Tray Log') ? 'Open Tray Log' : undefined;
    await vscode.commands.executeCommand(COMMANDS.startTray);
    const [error] = stub.shown;
    assert.strictEqual(error.kind, 'error');
    assert.match(error.message, /the tray did not start \(exit code 1\): .*no graphical session/);
    assert.doesNotMatch(error.message, /started/);
    assert.strictEqual(stub.opened[0].fsPath, '/tmp/rootguard-tray.log');
  });

  it('Start Tray with the bundled server installs the tray into its own environment, then reports the real outcome', async () => {
    deps.server = { command: '/usr/bin/python3', args: ['/ext/bundled/tool/launch.py', 'lsp_bridge'] };
    stub.answer = () => undefined; // the offer dismissed: nothing installed, nothing started
    await vscode.commands.executeCommand(COMMANDS.startTray);
    assert.deepStrictEqual([deps.installs, deps.spawned.length], [0, 0]);
    assert.match(stub.shown[0].message, /not installed\. Install it into the extension's own environment/);
    assert.doesNotMatch(stub.shown[0].message, /rootguard\[tray\]|pip install --user|pipx/);
    stub.answer = (shown) => (shown.items.includes('Install Tray…') ? 'Install Tray…' : undefined);
    deps.trayResult = { kind: 'exited', code: 1, signal: null, output: 'rootguard tray: no graphical session (DISPLAY and WAYLAND_DISPLAY are unset)\n' };
    await vscode.commands.executeCommand(COMMANDS.startTray);
    assert.strictEqual(deps.installs, 1);
    assert.deepStrictEqual(deps.spawned, [{ command: '/storage/tray-env/bin/rootguard', args: ['tray'] }]);
    const outcome = stub.shown[stub.shown.length - 1];
    assert.strictEqual(outcome.kind, 'error');
    assert.match(outcome.message, /the tray did not start \(exit code 1\): rootguard tray: no graphical session/);
    deps.trayResult = { kind: 'running', pid: 7 };
    await vscode.commands.executeCommand(COMMANDS.startTray); // installed now: started directly
    assert.strictEqual(deps.installs, 1);
    assert.match(stub.shown[stub.shown.length - 1].message, /the tray is running \(pid 7\)/);
    deps.installed = null;
    deps.installOutcome = new Error('the tray install failed (exit 1): No matching distribution found for PySide6-Essentials');
    await vscode.commands.executeCommand(COMMANDS.startTray);
    assert.match(stub.shown[stub.shown.length - 1].message, /install failed .*PySide6-Essentials/);
    deps.onPath = '/home/u/.local/bin/rootguard';
    deps.spawned = [];
    await vscode.commands.executeCommand(COMMANDS.startTray);
    assert.deepStrictEqual(deps.spawned, [{ command: '/home/u/.local/bin/rootguard', args: ['tray'] }]);
  });

  it('Acknowledge Widening reaches the server acknowledgement', async () => {
    await vscode.commands.executeCommand(COMMANDS.acknowledgeWidening);
    assert.strictEqual(deps.acknowledged, 1);
  });

  it('Restart Server and Show Log reach the server controller and the log', async () => {
    await vscode.commands.executeCommand(COMMANDS.restartServer);
    await vscode.commands.executeCommand(COMMANDS.showLog);
    assert.strictEqual(deps.restarts, 1);
    assert.strictEqual(deps.logsShown, 1);
  });

  it('explainItems and rootItems are usable without a server', () => {
    assert.deepStrictEqual(explainItems({ path: '/x', decisions: [] }), []);
    assert.strictEqual(rootItems({ ...normalStatus(), entries: [] })[0].label, `$(folder) ${NARROW}`);
  });

  it("never registers a command id the language client registers for the server's own commands", () => {
    const server = ['rootguard.acknowledge', 'rootguard.withdrawAcknowledgement', 'rootguard.migrateConfig'];
    assert.ok(Object.values(COMMANDS).every((id) => !server.includes(id)));
  });
});
