/**
 * The server controller with the real vscode-languageclient against a fake
 * LSP server process: status notifications, requests, approval answers, and
 * one clear error (no restart loop) when the server cannot start or dies.
 */
import * as assert from 'assert';
import * as path from 'path';
import { isCleanExit, ServerController } from '../src/server';
import { ServerState } from '../src/types';
import { stub } from './stubs/vscode';

const FAKE_SERVER = path.join(__dirname, 'fakeServer.js');

function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 8000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      const value = probe();
      if (value) {
        resolve(value);
      } else if (Date.now() - started > timeoutMs) {
        reject(new Error(`timed out waiting for ${what}`));
      } else {
        setTimeout(tick, 20);
      }
    };
    tick();
  });
}

describe('server controller (real language client, fake server)', function () {
  this.timeout(20000);
  let controller: ServerController;
  let states: ServerState[];
  let log: any;

  function startWith(mode: string): Promise<void> {
    process.env.FAKE_MODE = mode;
    stub.settings['rootguard.serverCommand'] = [process.execPath, FAKE_SERVER];
    controller = new ServerController(log);
    states = [];
    controller.onDidChangeState((s) => states.push(s));
    return controller.start();
  }

  beforeEach(() => {
    stub.reset();
    stub.setFolders(['/Users/dev/shop/packages/checkout']);
    const vscode = require('vscode');
    log = vscode.window.createOutputChannel('Root Guard', { log: true });
  });
  afterEach(async () => {
    await controller?.stop();
    controller?.dispose();
    delete process.env.FAKE_MODE;
  });

  it('relays rootguard/status and answers requests', async () => {
    await startWith('status');
    const first = await waitFor('a status', () => controller.status ?? undefined);
    assert.deepStrictEqual(first.roots, ['/Users/dev/shop/packages/checkout']);
    const result = await controller.request<any>('rootguard/explain', { path: 'file:///x', op: null });
    assert.strictEqual(result.decisions[0].reason, 'asked with op null');
    assert.ok(stub.logs[0].lines.some((l) => l.includes('fake server: initialize with 1 folder(s)')), 'server stderr goes to the log');
  });

  it('answers Deny to the server when the approval notification is dismissed', async () => {
    stub.answer = () => undefined;
    await startWith('status');
    const answered = await waitFor('the answer', () => controller.status?.summary?.startsWith('answer:') && controller.status.summary);
    assert.strictEqual(answered, 'answer: {"title":"Deny"}');
    assert.deepStrictEqual(stub.shown.map((s) => [s.kind, s.message]), [['warning', 'fake: write .env?']]);
  });

  it('passes the chosen approval to the server', async () => {
    stub.answer = (shown) => shown.items.find((i: { title: string }) => i.title === 'Allow once');
    await startWith('status');
    const answered = await waitFor('the answer', () => controller.status?.summary?.startsWith('answer:') && controller.status.summary);
    assert.strictEqual(answered, 'answer: {"title":"Allow once"}');
  });

  it('shows one error with Open Log when the server cannot start, and does not retry', async () => {
    let opened = 0;
    stub.answer = (shown) => {
      if (shown.kind === 'error') {
        opened += 1;
        return 'Open Log';
      }
      return undefined;
    };
    await startWith('exit');
    assert.strictEqual(controller.current.kind, 'down');
    await new Promise((r) => setTimeout(r, 300));
    const errors = stub.shown.filter((s) => s.kind === 'error');
    assert.strictEqual(errors.length, 1, JSON.stringify(stub.shown));
    assert.match(errors[0].message, /^Root Guard: could not start the server `.*fakeServer\.js`: it said "\/usr\/bin\/python3: No module named lsp_bridge"/);
    assert.deepStrictEqual(errors[0].items, ['Open Log', 'Restart Server']);
    assert.strictEqual(opened, 1);
    assert.ok(stub.logs[0].shown >= 1, 'Open Log shows the output channel');
    assert.ok(stub.logs[0].lines.some((l) => l.includes('No module named lsp_bridge')), 'server stderr reaches the log');
    assert.strictEqual(states.filter((s) => s.kind === 'starting').length, 1, 'started once, no restart loop');
  });

  it('stays down with one error when a fresh server dies', async () => {
    await startWith('crash');
    await waitFor('the down state', () => controller.current.kind === 'down');
    await new Promise((r) => setTimeout(r, 300));
    assert.strictEqual(stub.shown.filter((s) => s.kind === 'error').length, 1);
    assert.match(stub.shown.find((s) => s.kind === 'error')!.message, /stopped unexpectedly/);
    assert.strictEqual(states.filter((s) => s.kind === 'starting').length, 1);
  });

  it('runs one server when restarts pile up', async () => {
    await startWith('status');
    await waitFor('a status', () => controller.status);
    await Promise.all([controller.restart(), controller.restart(), controller.restart()]);
    assert.strictEqual(states.filter((s) => s.kind === 'starting').length, 4);
    await waitFor('a status after the restarts', () => controller.status);
    const result = await controller.request<any>('rootguard/explain', { path: 'file:///y', op: 'write' });
    assert.strictEqual(result.decisions[0].reason, 'asked with op "write"');
  });

  it('restarts when the server command setting changes', async () => {
    await startWith('status');
    await waitFor('a status', () => controller.status);
    stub.changeSettings({ 'rootguard.serverCommand': [process.execPath, FAKE_SERVER, '--changed'] });
    await waitFor('a second start', () => states.filter((s) => s.kind === 'starting').length === 2);
    await waitFor('a status after restart', () => controller.status);
    assert.ok(stub.logs[0].lines.some((l) => l.includes('--changed')));
  });
});

describe('server exit lines', () => {
  it('a clean exit (code 0) is not an error; any other code is', () => {
    assert.ok(isCleanExit('Server process exited with code 0.'));
    assert.ok(!isCleanExit('Server process exited with code 1.'));
    assert.ok(!isCleanExit('Server process exited with signal SIGKILL.'));
  });
});
