/** activate() end to end against the stand-in and the fake server. */
import * as assert from 'assert';
import * as path from 'path';
import * as vscode from 'vscode';
import { activate, deactivate } from '../src/extension';
import { stub } from './stubs/vscode';

const FAKE_SERVER = path.join(__dirname, 'fakeServer.js');

describe('activate', function () {
  this.timeout(20000);
  let context: { subscriptions: vscode.Disposable[]; extension: { packageJSON: { version: string } } };

  beforeEach(() => {
    stub.reset();
    stub.setFolders(['/Users/dev/shop/packages/checkout']);
    stub.settings['rootguard.serverCommand'] = [process.execPath, FAKE_SERVER];
    process.env.FAKE_MODE = 'crash-free';
    context = { subscriptions: [], extension: { packageJSON: { version: '0.1.0' } } };
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
    while (item.text !== '$(shield) 1 root' && Date.now() - started < 8000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.strictEqual(item.text, '$(shield) 1 root');
    assert.strictEqual(item.command, 'rootguard.showWideningReport');
  });

  it('opens the widening report in a webview from the command', async () => {
    await activate(context as unknown as vscode.ExtensionContext);
    const started = Date.now();
    while (stub.statusBarItems[0].text !== '$(shield) 1 root' && Date.now() - started < 8000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await vscode.commands.executeCommand('rootguard.showWideningReport');
    assert.strictEqual(stub.webviews.length, 1);
    assert.match(stub.webviews[0].html, /Root Guard: widening report/);
    assert.match(stub.webviews[0].html, /Content-Security-Policy/);
  });
});
