import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { describeTrayResult, lastLines, startTray, traySocketCandidates } from '../src/tray';

/** Real child processes (node scripts) stand in for trays that fail, start, or hang. */
describe('starting the tray', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-tray-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const node = (script: string) => ({ command: process.execPath, args: ['-e', script] });

  it('reports an immediate exit with the tray\'s own error', async () => {
    const line = node("console.error('rootguard tray: no graphical session (DISPLAY and WAYLAND_DISPLAY are unset)'); process.exit(1)");
    const result = await startTray(line, { logFile: path.join(dir, 'tray.log'), sockets: [path.join(dir, 'tray.sock')] });
    assert.strictEqual(result.kind, 'exited');
    const message = describeTrayResult(line, result);
    assert.strictEqual(message.level, 'error');
    assert.match(message.text, /did not start \(exit code 1\): rootguard tray: no graphical session/);
    assert.ok(message.offerLog);
  });

  it('reports running once the socket appears, and leaves the tray running', async () => {
    const sock = path.join(dir, 'run', 'rootguard', 'tray.sock');
    const script = `const fs=require('fs');fs.mkdirSync(${JSON.stringify(path.dirname(sock))},{recursive:true});`
      + `setTimeout(()=>fs.writeFileSync(${JSON.stringify(sock)},''),300);setTimeout(()=>{},60000)`;
    const result = await startTray(node(script), { logFile: path.join(dir, 'tray.log'), sockets: [sock], settleMs: 15000 });
    assert.strictEqual(result.kind, 'running');
    if (result.kind === 'running') {
      assert.doesNotThrow(() => process.kill(result.pid, 0), 'the tray outlives the wait');
      process.kill(result.pid);
    }
  });

  it('a spawn failure names the command', async () => {
    const result = await startTray({ command: path.join(dir, 'no-such-rootguard'), args: ['tray'] }, { logFile: path.join(dir, 'tray.log'), sockets: [] });
    assert.strictEqual(result.kind, 'unstartable');
    const message = describeTrayResult({ command: 'rootguard', args: ['tray'] }, result);
    assert.match(message.text, /could not start the tray .*ENOENT/);
    assert.ok(message.offerInstall);
  });

  it('a missing tray module offers the install', () => {
    const message = describeTrayResult({ command: 'python3', args: ['-m', 'tray'] }, {
      kind: 'exited', code: 1, signal: null, output: "/usr/bin/python3: No module named tray\n",
    });
    assert.ok(message.offerInstall);
  });

  it('knows where the socket is', () => {
    assert.deepStrictEqual(traySocketCandidates({ XDG_RUNTIME_DIR: '/run/user/1000' }, 'linux', 1000, '/home/u'), ['/run/user/1000/rootguard/tray.sock']);
    assert.deepStrictEqual(traySocketCandidates({ ROOTGUARD_TRAY_SOCKET: '/tmp/x.sock' }, 'linux', 1000, '/home/u'), ['/tmp/x.sock']);
    assert.ok(traySocketCandidates({}, 'linux', 1000, '/home/u').includes('/tmp/runtime-1000/rootguard/tray.sock'));
    assert.strictEqual(lastLines('a\n\nb\nc\nd\n'), 'b — c — d');
  });
});
