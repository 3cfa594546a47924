import * as assert from 'assert';
import { pathsFor, renderStatus, renderTooltip, widenedText } from '../src/status';
import { NARROW, noFolderStatus, normalStatus, REPO, widenedStatus } from './fixtures';

describe('status rendering', () => {
  it('shows a shield with the number of roots when all is well', () => {
    const view = renderStatus({ kind: 'running', status: normalStatus() }, 1);
    assert.strictEqual(view.text, '$(shield) 1 root');
    assert.strictEqual(view.background, undefined);
    assert.strictEqual(view.command, 'rootguard.showWideningReport');
    const two = renderStatus({ kind: 'running', status: { ...normalStatus(), roots: [NARROW, '/Users/dev/other'] } }, 2);
    assert.strictEqual(two.text, '$(shield) 2 roots');
  });

  it('warns with the ratio and the number of credential files on widening', () => {
    const view = renderStatus({ kind: 'running', status: widenedStatus() }, 2);
    assert.strictEqual(view.text, '$(warning) ×179 · 2 secrets files');
    assert.strictEqual(view.background, 'warning');
    assert.strictEqual(view.command, 'rootguard.showWideningReport');
  });

  it('rounds the ratio like the example (×180) and keeps one decimal for small ones', () => {
    const status = widenedStatus();
    status.inventory!.ratio = 180.2;
    status.inventory!.credentials = [{ path: `${REPO}/.env`, count: 4 }];
    assert.strictEqual(widenedText(status), '×180 · 1 secrets file');
    status.inventory!.ratio = 1.46;
    status.inventory!.credentials = [];
    status.inventory!.files_before = 1000;
    status.inventory!.files_after = 1460;
    assert.strictEqual(widenedText(status), '×1.5 · +460 files');
  });

  it('says when the inventory is still being counted, or absent', () => {
    const status = { ...widenedStatus(), inventory: null, inventory_pending: true };
    assert.strictEqual(renderStatus({ kind: 'running', status }, 2).text, '$(warning) union widened · counting…');
    status.inventory_pending = false;
    assert.strictEqual(renderStatus({ kind: 'running', status }, 2).text, '$(warning) union widened');
  });

  it('counts added files when there is no ratio (nothing before)', () => {
    const status = widenedStatus();
    status.inventory = { widens: true, files_before: 0, files_after: 1234, ratio: null, credentials: [] };
    assert.strictEqual(widenedText(status), '+1,234 files');
  });

  it('shows "no folder" when the window has no folder', () => {
    const view = renderStatus({ kind: 'running', status: noFolderStatus() }, 0);
    assert.strictEqual(view.text, '$(shield) no folder');
    assert.strictEqual(view.background, undefined);
    assert.match(view.tooltip, /No workspace folder is open/);
    assert.match(view.tooltip, /\*\*Union\*\*: empty/);
  });

  it('shows the server down with an error background and a click that opens the log', () => {
    const view = renderStatus({ kind: 'down', error: 'could not start the server `python3 -m lsp_bridge`: spawn python3 ENOENT' }, 1);
    assert.strictEqual(view.text, '$(error) Root Guard off');
    assert.strictEqual(view.background, 'error');
    assert.strictEqual(view.command, 'rootguard.showLog');
    assert.match(view.tooltip, /Root Guard server is not running/);
    assert.match(view.tooltip, /ENOENT/);
    assert.match(view.tooltip, /Restart Server/);
  });

  it('shows a spinner while starting and before the first status', () => {
    assert.strictEqual(renderStatus({ kind: 'starting' }, 1).text, '$(sync~spin) Root Guard');
    assert.strictEqual(renderStatus({ kind: 'running', status: null }, 1).text, '$(shield) Root Guard');
  });

  it('adds other warnings to the text and turns red on errors', () => {
    const status = normalStatus();
    status.warnings = [{ severity: 'warning', code: 'mount-missing', message: 'no mount for the folder' }];
    assert.strictEqual(renderStatus({ kind: 'running', status }, 1).text, '$(shield) 1 root · 1 warning');
    status.warnings.push({ severity: 'error', code: 'config-invalid', message: '.rootguard.toml: bad field' });
    const view = renderStatus({ kind: 'running', status }, 1);
    assert.strictEqual(view.text, '$(shield) 1 root · 2 problems');
    assert.strictEqual(view.background, 'error');
  });

  it('gives screen readers words instead of icon syntax', () => {
    const view = renderStatus({ kind: 'running', status: widenedStatus() }, 2);
    assert.ok(!view.accessibleText.includes('$('));
    assert.match(view.accessibleText, /×179 · 2 secrets files/);
  });
});

describe('status tooltip', () => {
  it('lists each union entry with its reason and origin', () => {
    const tooltip = renderTooltip(normalStatus());
    assert.match(tooltip, /\*\*Union\*\* \(2 entries\)/);
    assert.ok(tooltip.includes('- `/Users/dev/shop/packages/checkout` — workspace folder _(folder)_'), tooltip);
    assert.ok(tooltip.includes('`/Users/dev/shop-hotfix/packages/checkout` — linked worktree of shop _(worktree)_'), tooltip);
  });

  it('lists shadowed entries with what shadows them', () => {
    const tooltip = renderTooltip(widenedStatus());
    assert.ok(tooltip.includes(`- \`${NARROW}\` — inside \`${REPO}\``), tooltip);
  });

  it('lists worktrees with their mode, repository and flags', () => {
    const tooltip = renderTooltip(widenedStatus());
    assert.ok(tooltip.includes(`- \`/Users/dev/shop-hotfix\` — request of \`${REPO}\` (locked)`), tooltip);
  });

  it('lists mount mismatches', () => {
    const tooltip = renderTooltip(widenedStatus());
    assert.match(tooltip, /\*\*Mount mismatches\*\*/);
    assert.ok(tooltip.includes(`no mount for \`${REPO}\``));
    assert.ok(tooltip.includes('`/Users/dev/cache` → `/cache` is mounted but outside the union'));
  });

  it('explains the widening with files before and after and the secrets count', () => {
    const tooltip = renderTooltip(widenedStatus());
    assert.match(tooltip, /The union widened/);
    assert.ok(tooltip.includes(`\`${REPO}\` contains \`${NARROW}\``));
    assert.ok(tooltip.includes('340 → 61,000 files (×179), 2 secrets files, 1 .git directory'), tooltip);
    assert.match(tooltip, /Click for the widening report/);
  });

  it('does not repeat the widening warning but shows other warnings', () => {
    const status = widenedStatus();
    status.warnings!.push({ severity: 'information', code: 'x', message: 'config <b>note</b>' });
    const tooltip = renderTooltip(status);
    assert.ok(!tooltip.includes(`${REPO} widened`));
    assert.ok(tooltip.includes('$(info) config \\<b\\>note\\</b\\>'), tooltip);
  });

  it('keeps backticks in paths inside the code span', () => {
    const status = normalStatus();
    status.entries = [{ path: '/tmp/a`b', origin: 'folder', reason: 'workspace folder' }];
    assert.ok(renderTooltip(status).includes('``/tmp/a`b``'));
  });

  it('shortens paths under the home directory, and only those', () => {
    const tooltip = renderTooltip(widenedStatus(), pathsFor('/Users/dev'));
    assert.ok(tooltip.includes('- `~/shop` — workspace folder'), tooltip);
    assert.ok(tooltip.includes('`~/shop/packages/checkout` — inside `~/shop`'));
    assert.ok(tooltip.includes('`/Users/dev/cache` → `/cache`') === false && tooltip.includes('`~/cache` → `/cache`'));
    assert.strictEqual(pathsFor('/Users/dev').path('/Users/devil/x'), '`/Users/devil/x`');
    assert.strictEqual(pathsFor('/').path('/etc'), '`/etc`');
    assert.strictEqual(renderStatus({ kind: 'running', status: widenedStatus() }, 2, '/Users/dev').tooltip, tooltip);
  });

  it('caps long lists', () => {
    const status = normalStatus();
    status.entries = Array.from({ length: 30 }, (_, i) => ({ path: `/r/${i}`, origin: 'config', reason: 'rule' }));
    assert.match(renderTooltip(status), /… and 10 more/);
  });
});
