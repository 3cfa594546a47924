import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { describe as describeLine, findOnPath, isRootguardScript, mcpCommand, selectServerCommand, trayCommand } from '../src/serverCommand';

describe('server command selection', () => {
  it('uses rootguard.serverCommand when set', () => {
    const selection = selectServerCommand({
      serverCommand: ['/venv/bin/python', '-m', 'lsp_bridge'],
      python: '/other/python',
      rootguardOnPath: '/usr/local/bin/rootguard',
      pythonExtension: ['/ext/python'],
    });
    assert.deepStrictEqual(selection, { command: '/venv/bin/python', args: ['-m', 'lsp_bridge'], source: 'setting' });
  });

  it('then rootguard.python with -m lsp_bridge', () => {
    const selection = selectServerCommand({ serverCommand: [], python: ' /venv/bin/python ', rootguardOnPath: '/usr/local/bin/rootguard' });
    assert.deepStrictEqual(selection, { command: '/venv/bin/python', args: ['-m', 'lsp_bridge'], source: 'python-setting' });
  });

  it('then the rootguard console script on PATH', () => {
    const selection = selectServerCommand({ serverCommand: [], python: '', rootguardOnPath: '/usr/local/bin/rootguard', pythonExtension: ['/ext/python'] });
    assert.deepStrictEqual(selection, { command: '/usr/local/bin/rootguard', args: ['lsp'], source: 'path' });
  });

  it("then the Python extension's selected interpreter", () => {
    const selection = selectServerCommand({ pythonExtension: ['/usr/bin/conda', 'run', '-n', 'x', 'python'] });
    assert.deepStrictEqual(selection, {
      command: '/usr/bin/conda', args: ['run', '-n', 'x', 'python', '-m', 'lsp_bridge'], source: 'python-extension',
    });
  });

  it('falls back to python3 -m lsp_bridge', () => {
    assert.deepStrictEqual(selectServerCommand({}), { command: 'python3', args: ['-m', 'lsp_bridge'], source: 'default' });
    assert.deepStrictEqual(selectServerCommand({ serverCommand: [''], python: '  ' }).source, 'default');
  });
});

describe('tray and MCP command lines', () => {
  it('run the same interpreter as a python -m lsp_bridge server', () => {
    const server = { command: '/venv/bin/python', args: ['-X', 'utf8', '-m', 'lsp_bridge'] };
    assert.deepStrictEqual(trayCommand(server), { command: '/venv/bin/python', args: ['-X', 'utf8', '-m', 'tray'] });
    assert.deepStrictEqual(mcpCommand(server, ['/a', '/b c']), {
      command: '/venv/bin/python', args: ['-X', 'utf8', '-m', 'lsp_bridge.cli', 'mcp', '--root', '/a', '--root', '/b c'],
    });
  });

  it('use the rootguard script when the server is `rootguard lsp`', () => {
    const server = { command: '/usr/local/bin/rootguard', args: ['lsp'] };
    assert.deepStrictEqual(trayCommand(server), { command: '/usr/local/bin/rootguard', args: ['tray'] });
    assert.deepStrictEqual(mcpCommand(server, ['/a']), { command: '/usr/local/bin/rootguard', args: ['mcp', '--root', '/a'] });
  });

  it('fall back to `rootguard` for an unknown server command', () => {
    assert.deepStrictEqual(trayCommand({ command: '/opt/wrapper.sh', args: [] }), { command: 'rootguard', args: ['tray'] });
  });

  it('recognise the rootguard script on every platform', () => {
    assert.ok(isRootguardScript('rootguard'));
    assert.ok(isRootguardScript('C:\\Python\\Scripts\\rootguard.exe'));
    assert.ok(!isRootguardScript('/usr/bin/rootguard-old'));
  });

  it('describe a command line readably', () => {
    assert.strictEqual(describeLine({ command: '/my venv/python', args: ['-m', 'lsp_bridge'] }), '"/my venv/python" -m lsp_bridge');
  });
});

describe('findOnPath', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-path-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const executable = (candidate: string) => {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return fs.statSync(candidate).isFile();
    } catch {
      return false;
    }
  };

  it('finds an executable file and skips non-executable ones and empty entries', function () {
    if (process.platform === 'win32') {
      this.skip();
    }
    const first = path.join(dir, 'first');
    const second = path.join(dir, 'second');
    fs.mkdirSync(first);
    fs.mkdirSync(second);
    fs.writeFileSync(path.join(first, 'rootguard'), '#!/bin/sh\n', { mode: 0o644 });
    fs.writeFileSync(path.join(second, 'rootguard'), '#!/bin/sh\n', { mode: 0o755 });
    assert.strictEqual(findOnPath('rootguard', `::${first}:${second}`, 'linux', executable), path.join(second, 'rootguard'));
    assert.strictEqual(findOnPath('rootguard', first, 'linux', executable), null);
    assert.strictEqual(findOnPath('rootguard', undefined, 'linux', executable), null);
  });

  it('tries PATHEXT extensions on Windows', () => {
    const seen: string[] = [];
    const found = findOnPath('rootguard', 'C:\\a;C:\\b\\', 'win32', (c) => (seen.push(c), c === 'C:\\b\\rootguard.exe'), '.EXE;.CMD');
    assert.strictEqual(found, 'C:\\b\\rootguard.exe');
    assert.deepStrictEqual(seen.slice(0, 3), ['C:\\a\\rootguard', 'C:\\a\\rootguard.exe', 'C:\\a\\rootguard.cmd']);
  });
});
