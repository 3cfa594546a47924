import * as assert from 'assert';
import { ACKNOWLEDGE, isWideningMessage, isWideningRequest, SHOW_REPORT, shouldNotify, wideningKey, wideningLine } from '../src/widening';
import { WideningNotifier } from '../src/wideningNotifier';
import { Status } from '../src/types';
import { normalStatus, widenedStatus } from './fixtures';
import { stub } from './stubs/vscode';

describe('widening notification rules', () => {
  it('notify for an unacknowledged widening once its count is in', () => {
    assert.ok(shouldNotify(widenedStatus()));
    assert.ok(!shouldNotify({ ...widenedStatus(), inventory: null, inventory_pending: true }));
    assert.ok(!shouldNotify({ ...widenedStatus(), acknowledged: true }));
    assert.ok(!shouldNotify(normalStatus()));
    assert.ok(!shouldNotify(null));
  });

  it('one line a person reads whole', () => {
    // The server's own line (status.warning_line), shown as it is: rendered once, in Python.
    assert.strictEqual(
      wideningLine(widenedStatus()),
      "Root Guard: adding shop widened the agent's boundary ×1.3: +227 files, 2 secrets files, .git (4 commits)",
    );
    assert.ok(!wideningLine(widenedStatus()).includes('\n'));
  });

  it('the same widening has the same key whatever the inventory says', () => {
    const counting = { ...widenedStatus(), inventory: null, inventory_pending: true };
    assert.strictEqual(wideningKey(counting), wideningKey(widenedStatus()));
    const wider = { ...widenedStatus(), union: ['/Users/dev'] };
    assert.notStrictEqual(wideningKey(wider), wideningKey(widenedStatus()));
  });

  it("recognises the server's widening warnings, not other messages", () => {
    assert.ok(isWideningMessage("Root Guard: the agent's file boundary widened. /x widens /y\n3 secrets files"));
    assert.ok(isWideningMessage("Root Guard: adding shop widened the agent's boundary ×6.2 — +3,509 files"));
    assert.ok(!isWideningMessage('Root Guard: cannot read /x/.rootguard.toml'));
    assert.ok(isWideningRequest([{ title: SHOW_REPORT }, { title: ACKNOWLEDGE }]));
    assert.ok(!isWideningRequest([{ title: 'Allow once' }, { title: 'Deny' }]));
  });
});

describe('WideningNotifier', () => {
  let current: Status | null;
  let reports: number;
  let acknowledgements: number;
  let acknowledgeFails: boolean;
  let notifier: WideningNotifier;
  beforeEach(() => {
    stub.reset();
    current = null;
    reports = 0;
    acknowledgements = 0;
    acknowledgeFails = false;
    notifier = new WideningNotifier({
      status: () => current,
      showReport: async () => (reports += 1),
      acknowledge: async () => {
        if (acknowledgeFails) {
          throw new Error('Unhandled method rootguard.acknowledge');
        }
        acknowledgements += 1;
      },
      log: () => undefined,
    });
  });
  const warnings = () => stub.shown.filter((s) => s.kind === 'warning');
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('shows one warning with Show report and Acknowledge per widening, after the count', async () => {
    current = { ...widenedStatus(), inventory: null, inventory_pending: true };
    notifier.onStatus(current);
    assert.strictEqual(warnings().length, 0, 'waits for the numbers');
    current = widenedStatus();
    notifier.onStatus(current);
    notifier.onStatus(current);
    await settle();
    assert.strictEqual(warnings().length, 1);
    assert.deepStrictEqual(warnings()[0].items, [SHOW_REPORT, ACKNOWLEDGE]);
    assert.match(warnings()[0].message, /^Root Guard: adding shop widened/);
  });

  it('Show report opens the report; Acknowledge asks the server and confirms', async () => {
    stub.answer = (shown) => (shown.kind === 'warning' ? SHOW_REPORT : undefined);
    current = widenedStatus();
    notifier.onStatus(current);
    await settle();
    assert.strictEqual(reports, 1);
    notifier.onStatus(normalStatus()); // narrowed: the next widening is news again
    stub.answer = (shown) => (shown.kind === 'warning' ? ACKNOWLEDGE : undefined);
    notifier.onStatus(current);
    await settle();
    await settle();
    assert.strictEqual(acknowledgements, 1);
    assert.match(stub.shown[stub.shown.length - 1].message, /acknowledged/);
  });

  it('a failed acknowledgement is an error, not a silent success', async () => {
    acknowledgeFails = true;
    await notifier.acknowledge();
    assert.deepStrictEqual(stub.shown.map((s) => s.kind), ['error']);
    assert.match(stub.shown[0].message, /not recorded: Unhandled method rootguard\.acknowledge/);
  });

  it("the server's own warning becomes the same single notification and gets the chosen button back", async () => {
    stub.answer = (shown) => (shown.kind === 'warning' ? ACKNOWLEDGE : undefined);
    current = { ...widenedStatus(), inventory: null, inventory_pending: true };
    const choice = await notifier.fromServer("Root Guard: adding shop widened the agent's boundary ×6.2 — +3,509 files");
    assert.strictEqual(choice, ACKNOWLEDGE);
    current = widenedStatus();
    notifier.onStatus(current); // the count arrives: no second notification
    await settle();
    assert.strictEqual(warnings().length, 1);
    assert.strictEqual(warnings()[0].message, "Root Guard: adding shop widened the agent's boundary ×6.2 — +3,509 files");
  });
});

describe('status bar after an acknowledgement', () => {
  it('keeps the warning background for a folder inside another, and says it was acknowledged', () => {
    const { renderStatus } = require('../src/status');
    // acknowledged means nothing is pending: the server's summary then names the folder inside another
    const view = renderStatus({ kind: 'running', status: { ...widenedStatus(), acknowledged: true, summary: '⚠ checkout inside shop (acknowledged)' } }, 2);
    assert.strictEqual(view.background, 'warning');
    assert.strictEqual(view.text.match(/acknowledged/g)?.length, 1);
    assert.doesNotMatch(renderStatus({ kind: 'running', status: widenedStatus() }, 2).text, /acknowledged/);
  });
});
