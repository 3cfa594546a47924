import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { findPythonOnPath, pythonVersion } from '../src/interpreter';
import {
  describe as describeLine, findOnPath, isBundled, isRootguardScript, isSupportedPython, mcpCommand, missingPythonMessage,
  parsePythonVersion, selectServerCommand, trayCommand,
} from '../src/serverCommand';

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
    assert.deepStrictEqual(selectServerCommand({ serverCommand: [''], python: '  ' })?.source, 'default');
  });
});

describe('server command selection with the bundled server', () => {
  const bundle = '/ext/bundled/tool/launch.py';

  it("runs the bundle with the Python extension's interpreter before anything on PATH", () => {
    const selection = selectServerCommand({ bundle, pythonExtension: ['/venv/bin/python'], pythonOnPath: '/usr/bin/python3', rootguardOnPath: '/usr/bin/rootguard' });
    assert.deepStrictEqual(selection, { command: '/venv/bin/python', args: [bundle, 'lsp_bridge'], source: 'python-extension' });
    assert.ok(selection && isBundled(selection));
  });

  it('then with a python3 >= 3.11 found on PATH', () => {
    assert.deepStrictEqual(selectServerCommand({ bundle, pythonOnPath: '/usr/bin/python3', rootguardOnPath: '/usr/bin/rootguard' }), {
      command: '/usr/bin/python3', args: [bundle, 'lsp_bridge'], source: 'python-on-path',
    });
  });

  it('rootguard.python runs the bundle too; rootguard.serverCommand still wins', () => {
    assert.deepStrictEqual(selectServerCommand({ bundle, python: '/opt/py/bin/python' }), {
      command: '/opt/py/bin/python', args: [bundle, 'lsp_bridge'], source: 'python-setting',
    });
    assert.strictEqual(selectServerCommand({ bundle, serverCommand: ['rootguard', 'lsp'] })?.source, 'setting');
  });

  it('is null when no interpreter can run it, and the one message says what to install', () => {
    assert.strictEqual(selectServerCommand({ bundle, rootguardOnPath: '/usr/bin/rootguard' }), null);
    const message = missingPythonMessage('linux');
    assert.match(message, /needs Python 3\.11 or newer/);
    assert.match(message, /sudo apt install python3/);
    assert.match(missingPythonMessage('darwin'), /brew install/);
    assert.match(missingPythonMessage('win32'), /winget install/);
  });

  it('the tray is not in the bundle: `rootguard tray` from PATH, else nothing', () => {
    const server = { command: '/usr/bin/python3', args: [bundle, 'lsp_bridge'] };
    assert.strictEqual(trayCommand(server, null), null);
    assert.deepStrictEqual(trayCommand(server, '/home/u/.local/bin/rootguard'), { command: '/home/u/.local/bin/rootguard', args: ['tray'] });
  });

  it('MCP runs from a full install on PATH, else from the bundle', () => {
    const server = { command: '/usr/bin/python3', args: [bundle, 'lsp_bridge'] };
    assert.deepStrictEqual(mcpCommand(server, ['/a']), { command: '/usr/bin/python3', args: [bundle, 'lsp_bridge.cli', 'mcp', '--root', '/a'] });
    assert.deepStrictEqual(mcpCommand(server, ['/a'], '/usr/bin/rootguard'), { command: '/usr/bin/rootguard', args: ['mcp', '--root', '/a'] });
  });
});

describe('Python versions', () => {
  it('parses and judges versions', () => {
    assert.deepStrictEqual(parsePythonVersion('3.12\n'), [3, 12]);
    assert.strictEqual(parsePythonVersion('Python was not found'), null);
    assert.ok(isSupportedPython([3, 11]) && isSupportedPython([3, 13]) && isSupportedPython([4, 0]));
    assert.ok(!isSupportedPython([3, 10]) && !isSupportedPython([2, 7]) && !isSupportedPython(null));
  });

  it('asks a real interpreter for its version; a non-Python answers null', async function () {
    this.timeout(20000);
    const python = findOnPath('python3', process.env.PATH, process.platform, (c) => fs.existsSync(c));
    if (python) {
      assert.ok(isSupportedPython(await pythonVersion([python])), `${python} should be >= 3.11 on the test machine`);
    }
    assert.strictEqual(await pythonVersion([process.execPath]), null);
    assert.strictEqual(await pythonVersion(['/nonexistent/python3']), null);
  });

  it('findPythonOnPath skips an old python3 for a newer python3.x on PATH', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-py-'));
    try {
      const old = path.join(dir, 'old');
      const fresh = path.join(dir, 'fresh');
      fs.mkdirSync(old);
      fs.mkdirSync(fresh);
      for (const [d, name] of [[old, 'python3'], [fresh, 'python3.12']]) {
        fs.writeFileSync(path.join(d, name), '#!/bin/sh\n', { mode: 0o755 });
      }
      const versions: Record<string, [number, number]> = { [path.join(old, 'python3')]: [3, 9], [path.join(fresh, 'python3.12')]: [3, 12] };
      const probe = async (command: readonly string[]) => versions[command[0]] ?? null;
      const found = await findPythonOnPath(`${old}:${fresh}`, 'linux', (c) => fs.existsSync(c), undefined, probe);
      assert.strictEqual(found, path.join(fresh, 'python3.12'));
      assert.strictEqual(await findPythonOnPath(old, 'linux', (c) => fs.existsSync(c), undefined, probe), null);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
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
