import * as assert from 'assert';
import { escape } from '../src/markdown';
import { pathsFor, renderStatus, renderTooltip, widenedText } from '../src/status';
import { HOTFIX, NARROW, noFolderStatus, normalStatus, pendingStatus, REPO, widenedStatus } from './fixtures';

describe('status rendering', () => {
  it('shows a shield with the number of roots when all is well', () => {
    const view = renderStatus({ kind: 'running', status: normalStatus() }, 1);
    assert.strictEqual(view.text, '$(shield) 2 roots (1 folder)');
    assert.strictEqual(view.background, undefined);
    assert.strictEqual(view.command, 'rootguard.showWideningReport');
    // the count is the server's (the union's entries), the same in the tooltip, the tray and docs/warnings.md
    const two = renderStatus({ kind: 'running', status: { ...normalStatus(), roots: [NARROW, '/Users/dev/other'], summary: '3 roots (2 folders)' } }, 2);
    assert.strictEqual(two.text, '$(shield) 3 roots (2 folders)');
    assert.match(renderTooltip({ ...normalStatus(), summary: '3 roots (2 folders)' }), /Root Guard\*\* — 3 roots \\\(2 folders\\\)/);
  });

  it('shows the server\'s summary on widening, as the tray and the message do', () => {
    const status = widenedStatus();
    const view = renderStatus({ kind: 'running', status }, 2);
    assert.strictEqual(status.summary, '⚠ union ×1.3: +227 files, 2 secrets files, .git (4 commits)');
    assert.strictEqual(view.text, '$(warning) union ×1.3: +227 files, 2 secrets files, .git (4 commits)');
    assert.strictEqual(view.background, 'warning');
    assert.strictEqual(view.command, 'rootguard.showWideningReport');
  });

  it('shows whatever summary the server sends, without re-rendering it', () => {
    const status = widenedStatus();
    status.summary = '⚠ union ×180: +60,660 files, 3 secrets files, .git (53 commits)';
    assert.strictEqual(widenedText(status), 'union ×180: +60,660 files, 3 secrets files, .git (53 commits)');
  });

  it('says "acknowledged" once, in the server\'s words, when the user accepted a union that stays wide', () => {
    const own = renderStatus({ kind: 'running', status: { ...widenedStatus(), acknowledged: true, summary: '⚠ checkout inside shop (acknowledged)' } }, 2);
    assert.strictEqual(own.text, '$(warning) checkout inside shop (acknowledged)');
    assert.strictEqual(own.background, 'warning');
  });

  it('says when the inventory is still being counted', () => {
    const status = pendingStatus();
    assert.strictEqual(status.inventory, null);
    assert.strictEqual(status.inventory_pending, true);
    assert.strictEqual(renderStatus({ kind: 'running', status }, 2).text, `$(warning) ${status.summary.replace(/^⚠ /, '')}`);
    assert.match(status.summary, /measuring…$/);
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
    assert.strictEqual(renderStatus({ kind: 'running', status }, 1).text, '$(shield) 2 roots (1 folder) · 1 warning');
    status.warnings.push({ severity: 'error', code: 'config-invalid', message: '.rootguard.toml: bad field' });
    const view = renderStatus({ kind: 'running', status }, 1);
    assert.strictEqual(view.text, '$(shield) 2 roots (1 folder) · 2 problems');
    assert.strictEqual(view.background, 'error');
  });

  it('gives screen readers words instead of icon syntax', () => {
    const view = renderStatus({ kind: 'running', status: widenedStatus() }, 2);
    assert.ok(!view.accessibleText.includes('$('));
    assert.match(view.accessibleText, /union ×1\.3: \+227 files, 2 secrets files/);
  });
});

describe('status tooltip', () => {
  it('lists each union entry with its reason and origin', () => {
    const tooltip = renderTooltip(normalStatus());
    assert.match(tooltip, /\*\*Union\*\* \(2 entries\)/);
    assert.ok(tooltip.includes(`- \`${NARROW}\` — workspace folder _(folder)_`), tooltip);
    assert.ok(tooltip.includes(`\`${HOTFIX}/packages/checkout\` — included linked worktree of the repository of ${REPO} _(worktree)_`), tooltip);
  });

  it('lists shadowed entries with what shadows them', () => {
    const tooltip = renderTooltip(widenedStatus());
    assert.ok(tooltip.includes(`- \`${NARROW}\` — inside \`${REPO}\``), tooltip);
  });

  it('lists worktrees with their mode, repository and flags', () => {
    const status = widenedStatus();
    assert.ok(renderTooltip(status).includes(`- \`${HOTFIX}\` — include of \`${REPO}\``), renderTooltip(status));
    status.worktrees[0] = { ...status.worktrees[0], mode: 'request', locked: true };
    assert.ok(renderTooltip(status).includes(`- \`${HOTFIX}/packages/checkout\` — request of \`${REPO}\` (locked)`));
  });

  it('lists mount mismatches', () => {
    const status = widenedStatus();
    status.mounts!.roots_without_mount = [REPO];
    status.mounts!.mounts_outside_union = [{ source: '/Users/dev/cache', target: '/cache' }];
    const tooltip = renderTooltip(status);
    assert.match(tooltip, /\*\*Mount mismatches\*\*/);
    assert.ok(tooltip.includes(`no mount for \`${REPO}\``));
    assert.ok(tooltip.includes('`/Users/dev/cache` → `/cache` is mounted but outside the union'));
  });

  it('shows the widening in the server\'s own lines', () => {
    const status = widenedStatus();
    const tooltip = renderTooltip(status);
    assert.match(tooltip, /The union widened/);
    assert.strictEqual(status.widening_lines.length, 9);
    for (const line of status.widening_lines) {
      assert.ok(tooltip.includes(`- ${escape(line)}`), line);
    }
    assert.ok(tooltip.includes('680 → 907 files'), tooltip);
    assert.ok(tooltip.includes('shop/.env \\(4\\)'), tooltip);
    assert.match(tooltip, /Click for the widening report/);
  });

  it('does not repeat the widening warning but shows other warnings', () => {
    const status = widenedStatus();
    status.warnings.push({ severity: 'warning', code: 'x', message: 'config <b>note</b>' });
    const tooltip = renderTooltip(status);
    assert.ok(!tooltip.includes(status.warnings[0].message));
    assert.ok(tooltip.includes('$(warning) config \\<b\\>note\\</b\\>'), tooltip);
  });

  it('keeps backticks in paths inside the code span', () => {
    const status = normalStatus();
    status.entries = [{ path: '/tmp/a`b', origin: 'folder', reason: 'workspace folder' }];
    assert.ok(renderTooltip(status).includes('``/tmp/a`b``'));
  });

  it('shortens paths under the home directory, and only those', () => {
    const tooltip = renderTooltip(widenedStatus(), pathsFor('/Users/dev'));
    assert.ok(tooltip.includes('- `~/src/shop` — workspace folder'), tooltip);
    assert.ok(tooltip.includes('`~/src/shop/packages/checkout` — inside `~/src/shop`'));
    assert.strictEqual(pathsFor('/Users/dev').path('/Users/devil/x'), '`/Users/devil/x`');
    assert.strictEqual(pathsFor('/').path('/etc'), '`/etc`');
    assert.strictEqual(renderStatus({ kind: 'running', status: widenedStatus() }, 2, '/Users/dev').tooltip, tooltip);
  });

  it('caps long lists', () => {
    const status = normalStatus();
    status.entries = Array.from({ length: 30 }, (_, i) => ({ path: `/r/${i}`, origin: 'config' as const, reason: 'rule' }));
    assert.match(renderTooltip(status), /… and 10 more/);
  });
});
