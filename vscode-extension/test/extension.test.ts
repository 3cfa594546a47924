/** activate() end to end against the stand-in and the fake server. */
import * as assert from 'assert';
import * as path from 'path';
import * as vscode from 'vscode';
import { activate, deactivate } from '../src/extension';
import { stub } from './stubs/vscode';

const FAKE_SERVER = path.join(__dirname, 'fakeServer.js');

describe('activate', function () {
  this.timeout(20000);
  let context: { subscriptions: vscode.Disposable[]; extensionPath: string; extension: { packageJSON: { version: string } } };

  beforeEach(() => {
    stub.reset();
    stub.setFolders(['/Users/dev/shop/packages/checkout']);
    stub.settings['rootguard.serverCommand'] = [process.execPath, FAKE_SERVER];
    process.env.FAKE_MODE = 'crash-free';
    context = { subscriptions: [], extensionPath: path.join(__dirname, '..', '..'), extension: { packageJSON: { version: '0.1.0' } } };
  });
  afterEach(async () => {
    await deactivate();
    context.subscriptions.forEach((d) => d.dispose());
    delete process.env.FAKE_MODE;
  });

  it('shows the status bar, registers the commands and renders the first status', async () => {
    const activated = activate(context as unknown as vscode.ExtensionContext);
    const [item] = stub.statusBarItems;
    assert.ok(item && item.visible, 'the status bar item is there before the server answers');
    await activated;
    assert.ok(stub.commands.has('rootguard.restartServer'));
    assert.ok(stub.commands.has('rootguard.showWideningReport'));
    assert.strictEqual(stub.logs[0].name, 'Root Guard');
    const started = Date.now();
    while (!item.text.startsWith('$(shield) answer') && Date.now() - started < 8000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(item.text, /^\$\(shield\) answer: /); // the server's summary, as it words it
    assert.strictEqual(item.command, 'rootguard.showWideningReport');
  });

  it('opens the widening report in a webview from the command', async () => {
    await activate(context as unknown as vscode.ExtensionContext);
    const started = Date.now();
    while (!stub.statusBarItems[0].text.startsWith('$(shield) answer') && Date.now() - started < 8000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await vscode.commands.executeCommand('rootguard.showWideningReport');
    assert.strictEqual(stub.webviews.length, 1);
    assert.match(stub.webviews[0].html, /Root Guard: widening report/);
    assert.match(stub.webviews[0].html, /Content-Security-Policy/);
  });

  it('a server that starts wide gets one notification with Show report and Acknowledge, and Acknowledge reaches it', async () => {
    process.env.FAKE_MODE = 'widen';
    stub.answer = (shown) => (shown.kind === 'warning' ? 'Acknowledge' : undefined);
    await activate(context as unknown as vscode.ExtensionContext);
    const summary = () => (stub.statusBarItems[0].tooltip as vscode.MarkdownString | undefined)?.value ?? '';
    const started = Date.now();
    while (!/answer: .*acknowledged 1/.test(summary()) && Date.now() - started < 8000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const warnings = stub.shown.filter((s) => s.kind === 'warning');
    assert.strictEqual(warnings.length, 1, JSON.stringify(stub.shown.map((s) => s.message)));
    assert.deepStrictEqual(warnings[0].items, ['Show report', 'Acknowledge']);
    assert.doesNotMatch(warnings[0].message, /\n/);
    assert.match(summary(), /answer: \{"title":"Acknowledge"\}; acknowledged 1/);
    assert.ok(stub.shown.some((s) => s.kind === 'info' && /acknowledged/.test(s.message)));
  });
});
