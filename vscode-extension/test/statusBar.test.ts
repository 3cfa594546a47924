import * as assert from 'assert';
import { StatusBar } from '../src/statusBar';
import { MarkdownString, stub, ThemeColor } from './stubs/vscode';
import { normalStatus, widenedStatus } from './fixtures';

describe('status bar item', () => {
  beforeEach(() => stub.reset());

  it('is created and shown at once, before any status arrives', () => {
    const bar = new StatusBar();
    const [item] = stub.statusBarItems;
    assert.strictEqual(item.id, 'rootguard.status');
    assert.strictEqual(item.name, 'Root Guard');
    assert.ok(item.visible);
    assert.strictEqual(item.text, '$(sync~spin) Root Guard');
    bar.dispose();
  });

  it('shows the warning background, text and trusted-less Markdown tooltip on widening', () => {
    const bar = new StatusBar();
    bar.show({ kind: 'running', status: widenedStatus() }, 2);
    const [item] = stub.statusBarItems;
    assert.strictEqual(item.text, '$(warning) union ×1.3: +227 files, 2 secrets files, .git (4 commits)');
    assert.ok(item.backgroundColor instanceof ThemeColor);
    assert.strictEqual(item.backgroundColor.id, 'statusBarItem.warningBackground');
    assert.strictEqual(item.command, 'rootguard.showWideningReport');
    assert.ok(item.tooltip instanceof MarkdownString);
    assert.strictEqual(item.tooltip.supportThemeIcons, true);
    assert.strictEqual(item.tooltip.isTrusted, false);
    assert.match(item.tooltip.value, /Shadowed/);
  });

  it('clears the background when the union is narrow again', () => {
    const bar = new StatusBar();
    bar.show({ kind: 'running', status: widenedStatus() }, 2);
    bar.show({ kind: 'running', status: normalStatus() }, 1);
    const [item] = stub.statusBarItems;
    assert.strictEqual(item.text, '$(shield) 2 roots (1 folder)');
    assert.strictEqual(item.backgroundColor, undefined);
  });

  it('uses the error background when the server is down', () => {
    const bar = new StatusBar();
    bar.show({ kind: 'down', error: 'spawn python3 ENOENT' }, 1);
    const [item] = stub.statusBarItems;
    assert.strictEqual((item.backgroundColor as ThemeColor).id, 'statusBarItem.errorBackground');
    assert.strictEqual(item.command, 'rootguard.showLog');
    assert.strictEqual(item.accessibilityInformation?.label, 'Root Guard: Root Guard off');
  });
});
