import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { agentsCommandLine, GUARD_AGENTS_COMMAND, guardSummary, parseAgents, registerGuardAgents } from '../src/agents';
import { stub } from './stubs/vscode';

const REPO = path.resolve(__dirname, '..', '..', '..');
const PYTHON = path.join(REPO, '.venv', 'bin', 'python');

describe('Guard Agents', () => {
  beforeEach(() => stub.reset());

  it('runs rootguard from the language server\'s own installation', () => {
    const venv = { command: '/v/bin/python', args: ['-m', 'lsp_bridge'] };
    assert.deepStrictEqual(agentsCommandLine(venv, ['agents', 'status']),
      { command: '/v/bin/python', args: ['-m', 'lsp_bridge.cli', 'agents', 'status'] });
    const bundle = { command: '/usr/bin/python3', args: ['-I', '/ext/bundled/tool/launch.py', 'lsp_bridge'] };
    assert.deepStrictEqual(agentsCommandLine(bundle, ['agents', 'install', 'claude']),
      { command: '/usr/bin/python3', args: ['-I', '/ext/bundled/tool/launch.py', 'lsp_bridge.cli', 'agents', 'install', 'claude'] });
    assert.deepStrictEqual(agentsCommandLine(bundle, ['agents'], '/home/alice/.local/bin/rootguard'),
      { command: '/home/alice/.local/bin/rootguard', args: ['agents'] });
    assert.deepStrictEqual(agentsCommandLine({ command: '/x/rootguard', args: ['lsp'] }, ['agents']),
      { command: '/x/rootguard', args: ['agents'] });
  });

  it('reads the status and words the outcome in one line', () => {
    const agents = parseAgents(JSON.stringify({ agents: [
      { agent: 'claude', label: 'Claude Code', present: true, config_dirs: ['/p/.claude'], guarded: true, hooks: [], note: '' },
      { agent: 'codex', label: 'Codex CLI', present: true, config_dirs: ['/h/.codex'], guarded: false, hooks: [], note: 'installed but not trusted yet' },
      { agent: 'gemini', label: 'Gemini CLI', present: false, config_dirs: [], guarded: false, hooks: [], note: '' },
    ] }));
    assert.strictEqual(guardSummary(agents, []),
      'Root Guard: guarded: Claude Code. not guarded yet: Codex CLI (installed but not trusted yet).');
    assert.throws(() => parseAgents('{"error": 1}'));
  });

  it('installs the hook for the agents present, through the real command line', async function () {
    if (!fs.existsSync(PYTHON)) {
      this.skip();
    }
    this.timeout(120_000);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-agents-home-'));
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-agents-folder-'));
    fs.mkdirSync(path.join(folder, '.claude'));
    const saved = process.env.HOME;
    process.env.HOME = home;
    const logged: string[] = [];
    const disposable = registerGuardAgents({
      serverCommand: async () => ({ command: PYTHON, args: ['-m', 'lsp_bridge'] }),
      rootguardOnPath: () => null, folders: () => [folder], log: (m) => logged.push(m), showLog: () => undefined,
    });
    try {
      stub.answer = (shown) => (shown.kind === 'quickPick' ? shown.items.filter((i: { picked: boolean }) => i.picked) : undefined);
      await vscode.commands.executeCommand(GUARD_AGENTS_COMMAND);
      const pick = stub.shown.find((s) => s.kind === 'quickPick');
      assert.ok(pick, JSON.stringify(stub.shown));
      assert.deepStrictEqual(pick.items.map((i: { agent: string }) => i.agent), ['claude']);
      const settings = JSON.parse(fs.readFileSync(path.join(home, '.claude', 'settings.json'), 'utf8'));
      assert.match(settings.hooks.PreToolUse[0].hooks[0].command, / -P -m lsp_bridge\.cli hook claude$/);
      const last = stub.shown[stub.shown.length - 1];
      assert.strictEqual(last.message, 'Root Guard: guarded: Claude Code.');
      assert.ok(logged.some((l) => l.includes('hook installed')), logged.join('\n'));
    } finally {
      process.env.HOME = saved;
      disposable.dispose();
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('is contributed in package.json', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const entry = manifest.contributes.commands.find((c: { command: string }) => c.command === GUARD_AGENTS_COMMAND);
    assert.strictEqual(entry?.title, 'Guard Agents…');
  });
});
