import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { checkedLauncher, confinedEntry, confineMcpServer, listServers, rewriteServer } from '../src/confine';
import { COMMANDS } from '../src/commands';
import { stub } from './stubs/vscode';

const VSCODE_MCP = `// MCP servers for this workspace
{
  "servers": {
    // the file server the agent uses
    "files": { "command": "npx", "args": ["-y", "@acme/fs-server", "."], "env": { "LOG": "1" } },
    "boxed": { "command": "docker", "args": ["run", "--rm", "-i", "code-index:1.7.2"] },
    "wrapped": { "command": "rootguard", "args": ["run", "--root", "\${workspaceFolder}", "--", "srv"] },
    "remote": { "type": "http", "url": "https://example.invalid/mcp" },
  },
}
`;

describe('run an MCP server confined', () => {
  let dir: string;
  beforeEach(() => {
    stub.reset();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-confine-'));
    fs.mkdirSync(path.join(dir, '.vscode'));
    fs.writeFileSync(path.join(dir, '.vscode', 'mcp.json'), VSCODE_MCP);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('tells unconfined stdio servers from wrapped, container and remote ones', () => {
    const found = listServers(VSCODE_MCP).map((s) => [s.name, s.confinement]);
    assert.deepStrictEqual(found, [['files', 'unconfined'], ['boxed', 'container'], ['wrapped', 'confined'], ['remote', 'remote']]);
  });

  it('wraps the command and keeps the comments, the other keys and the other servers', () => {
    const [files] = listServers(VSCODE_MCP);
    const entry = confinedEntry(files.entry, '${workspaceFolder}');
    assert.deepStrictEqual(entry.args, ['run', '--root', '${workspaceFolder}', '--', 'npx', '-y', '@acme/fs-server', '.']);
    assert.strictEqual(entry.command, 'rootguard');
    const text = rewriteServer(VSCODE_MCP, 'servers', 'files', entry);
    assert.ok(text.startsWith('// MCP servers for this workspace'));
    assert.ok(text.includes('// the file server the agent uses'));
    const after = listServers(text);
    assert.deepStrictEqual(after.map((s) => s.confinement), ['confined', 'container', 'confined', 'remote']);
    assert.deepStrictEqual(after[0].entry.env, { LOG: '1' });
    assert.throws(() => confinedEntry(after[1].entry, '.'), /only an unconfined/);
  });

  it('previews, then rewrites the chosen entry only after the user confirms', async () => {
    const file = path.join(dir, '.vscode', 'mcp.json');
    const asked: string[] = [];
    stub.answer = (shown) => {
      if (shown.kind === 'quickPick') {
        asked.push(`pick:${shown.items.map((i: any) => i.label).join(',')}`);
        return shown.items[0];
      }
      asked.push(`confirm:${shown.options?.detail ?? ''}`);
      return asked.length === 2 ? 'Show Diff' : 'Rewrite';
    };
    const launcher = path.join(dir, 'bin', 'rootguard');
    fs.mkdirSync(path.dirname(launcher), { recursive: true });
    fs.writeFileSync(launcher, '#!/bin/sh\n', { mode: 0o755 });
    const written = await confineMcpServer([launcher], [dir]);
    assert.strictEqual(asked[0], 'pick:files');
    assert.ok(asked[1].includes('Before: npx -y @acme/fs-server .'));
    assert.ok(asked[1].includes(`After:  ${launcher} run --root "\${workspaceFolder}" -- npx -y @acme/fs-server .`));
    assert.strictEqual(asked.filter((a) => a.includes('Before:')).length, 2); // preview, then confirm again
    assert.strictEqual(fs.readFileSync(file, 'utf8'), written);
    assert.strictEqual(listServers(written!)[0].confinement, 'confined');
  });

  it('leaves the file alone when the user cancels', async () => {
    const file = path.join(dir, '.vscode', 'mcp.json');
    stub.answer = (shown) => (shown.kind === 'quickPick' ? shown.items[0] : undefined);
    assert.strictEqual(await confineMcpServer(['/usr/bin/true'], [dir]), undefined);
    assert.strictEqual(fs.readFileSync(file, 'utf8'), VSCODE_MCP);
  });

  it('refuses, before showing anything, a launcher that is not an existing absolute path', async () => {
    const file = path.join(dir, '.vscode', 'mcp.json');
    const asked: string[] = [];
    stub.answer = (shown) => {
      asked.push(shown.kind);
      return shown.kind === 'quickPick' ? shown.items[0] : 'Rewrite';
    };
    for (const launcher of [['rootguard'], [path.join(dir, 'missing', 'rootguard')], ['/usr/bin/python3', path.join(dir, 'gone', 'launch.py'), 'lsp_bridge.cli']]) {
      await assert.rejects(confineMcpServer(launcher, [dir]), /launcher/);
    }
    assert.ok(!asked.some((kind) => kind !== 'quickPick'));
    assert.strictEqual(fs.readFileSync(file, 'utf8'), VSCODE_MCP);
    assert.throws(() => checkedLauncher(['rootguard']), /not an existing absolute path/);
  });

  it('writes the bundle as an absolute launcher and still reads it as confined', () => {
    const entry = confinedEntry({ command: 'npx', args: ['srv'] }, '.', '/usr/bin/python3', ['/ext/bundled/tool/launch.py', 'lsp_bridge.cli']);
    assert.deepStrictEqual(entry.args, ['/ext/bundled/tool/launch.py', 'lsp_bridge.cli', 'run', '--root', '.', '--', 'npx', 'srv']);
    assert.strictEqual(listServers(JSON.stringify({ servers: { s: entry } }))[0].confinement, 'confined');
  });

  it('is a contributed command', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    assert.ok(manifest.contributes.commands.some((c: any) => c.command === COMMANDS.confineMcpServer));
    assert.ok(typeof vscode.commands.registerCommand === 'function');
  });
});
