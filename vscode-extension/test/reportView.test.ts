import * as assert from 'assert';
import { ReportView } from '../src/reportView';
import { stub } from './stubs/vscode';
import { normalStatus, widenedStatus } from './handmade';

describe('widening report view', () => {
  beforeEach(() => stub.reset());

  it('renders the report with a copy button that puts the docker arguments on the clipboard', async () => {
    const view = new ReportView();
    await view.show(widenedStatus());
    const [webview] = stub.webviews;
    assert.match(webview.html, /<button id="copy" class="secondary">Copy docker arguments<\/button>/);
    assert.match(webview.html, /script-src 'nonce-/);
    assert.match(webview.html, /What the union exposes/);
    webview.messages({ type: 'copyDocker' });
    await new Promise((r) => setTimeout(r, 10));
    assert.match(stub.clipboard, /^-v \/Users\/dev\/shop\/packages\/checkout:\/workspace:rw -v /);
    assert.match(stub.shown[0].message, /docker arguments copied/);
    view.dispose();
  });

  it('escapes the Markdown when no renderer is available and hides the copy button without mounts', async () => {
    const view = new ReportView();
    const status = normalStatus();
    status.summary = '<img src=x onerror=alert(1)>';
    await view.show(status);
    const html = stub.webviews[0].html;
    assert.ok(!html.includes('<img'), 'no raw HTML from the payload');
    assert.ok(!html.includes('id="copy"'));
  });

  it('updates an open report and reuses one panel', async () => {
    const view = new ReportView();
    await view.update(widenedStatus()); // nothing open: nothing to do
    assert.strictEqual(stub.webviews.length, 0);
    await view.show(normalStatus());
    await view.update(widenedStatus());
    assert.strictEqual(stub.webviews.length, 1);
    assert.match(stub.webviews[0].html, /The union widened/);
  });

  it('has Acknowledge while the widening is unacknowledged and Withdraw acknowledgement once acknowledged', async () => {
    const calls: string[] = [];
    const view = new ReportView({ acknowledge: async () => calls.push('acknowledge'), withdraw: async () => calls.push('withdraw') });
    await view.show(widenedStatus());
    assert.match(stub.webviews[0].html, /<button id="acknowledge">Acknowledge<\/button>/);
    assert.ok(!stub.webviews[0].html.includes('id="withdraw"'));
    stub.webviews[0].messages({ type: 'acknowledge' });
    await new Promise((r) => setTimeout(r, 10));
    await view.update({ ...widenedStatus(), acknowledged: true, withdrawable: true });
    assert.match(stub.webviews[0].html, /<button id="withdraw" class="secondary">Withdraw acknowledgement<\/button>/);
    assert.ok(!stub.webviews[0].html.includes('id="acknowledge"'));
    stub.webviews[0].messages({ type: 'withdraw' });
    await new Promise((r) => setTimeout(r, 10));
    assert.deepStrictEqual(calls, ['acknowledge', 'withdraw']);
    view.dispose();
  });

  it('suggests mounts for the narrow roots and says which reach beyond the acknowledged union', async () => {
    const view = new ReportView();
    await view.show(widenedStatus());
    const html = stub.webviews[0].html;
    assert.match(html, /For the narrow roots you acknowledged/);
    assert.match(html, /1 mount reaches outside the acknowledged union/);
    view.dispose();
  });
});
