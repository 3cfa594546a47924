import * as assert from 'assert';
import { answerShowMessageRequest } from '../src/approvals';
import { stub } from './stubs/vscode';

const ACTIONS = [{ title: 'Allow once' }, { title: 'Allow for this session' }, { title: 'Deny' }];
const PROMPT = { type: 2, message: 'mcp: write /Users/dev/shop/.env (rule env-files) — allow?', actions: ACTIONS };

describe('approvals without a tray', () => {
  beforeEach(() => stub.reset());

  it('shows a warning notification with the three answers', async () => {
    stub.answer = (shown) => shown.items[0];
    await answerShowMessageRequest(PROMPT);
    assert.strictEqual(stub.shown.length, 1);
    assert.strictEqual(stub.shown[0].kind, 'warning');
    assert.strictEqual(stub.shown[0].message, PROMPT.message);
    assert.deepStrictEqual(stub.shown[0].items.map((i) => i.title), ['Allow once', 'Allow for this session', 'Deny']);
  });

  it('returns the answer the user picked', async () => {
    stub.answer = (shown) => shown.items[1];
    assert.deepStrictEqual(await answerShowMessageRequest(PROMPT), { title: 'Allow for this session' });
  });

  it('answers Deny when the notification is dismissed', async () => {
    stub.answer = () => undefined;
    assert.deepStrictEqual(await answerShowMessageRequest(PROMPT), { title: 'Deny' });
  });

  it('answers Deny when showing the notification fails', async () => {
    stub.answer = () => {
      throw new Error('window closed');
    };
    assert.deepStrictEqual(await answerShowMessageRequest(PROMPT), { title: 'Deny' });
  });

  it('never returns an item the server did not offer', async () => {
    stub.answer = () => ({ title: 'Allow once' }); // a look-alike, not one of the offered objects
    assert.deepStrictEqual(await answerShowMessageRequest(PROMPT), { title: 'Deny' });
  });

  it('answers null to a dismissed prompt without a Deny action', async () => {
    stub.answer = () => undefined;
    assert.strictEqual(await answerShowMessageRequest({ type: 3, message: 'Reload?', actions: [{ title: 'Reload' }] }), null);
    assert.strictEqual(stub.shown[0].kind, 'info');
    assert.strictEqual(await answerShowMessageRequest({ type: 1, message: 'broken' }), null);
    assert.strictEqual(stub.shown[1].kind, 'error');
  });
});
