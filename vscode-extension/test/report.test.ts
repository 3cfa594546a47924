import * as assert from 'assert';
import { dockerArguments, renderReport, shellQuote } from '../src/report';
import { NARROW, normalStatus, REPO, widenedStatus } from './handmade';

describe('widening report', () => {
  const report = renderReport(widenedStatus());

  it('states what widened', () => {
    assert.match(report, /^# Root Guard: widening report/);
    assert.ok(report.includes('> **⚠ The union widened.** union ×180: +60,660 files, 2 secrets files, .git \\(53 commits\\)'), report);
    assert.ok(report.includes(`\`${REPO}\` contains the earlier entry \`${NARROW}\``));
  });

  it('shows files before and after with the ratio', () => {
    assert.ok(report.includes('| 340 | 61,000 | +60,660 | ×179 |'), report);
  });

  it('lists credential files by name with counts only', () => {
    assert.ok(report.includes(`- \`${REPO}/.env\` — 4 credentials`));
    assert.ok(report.includes(`- \`${REPO}/infra/prod.tfvars\` — 6 credentials`));
  });

  it('shows .git size, commits and deleted sensitive files still in history', () => {
    assert.ok(report.includes(`- \`${REPO}/.git\` — 640.0 MB, 53 commits; deleted but still in history: \`.env.production\``), report);
  });

  it('lists siblings, CI roles and package stores', () => {
    assert.match(report, /### Sibling packages now exposed \(2\)/);
    assert.ok(report.includes(`\`${REPO}/packages/payments\``));
    assert.ok(report.includes('`arn:aws:iam::123456789012:role/deploy`'));
    assert.ok(report.includes(`\`${REPO}/node_modules/.pnpm\` — 1,200 files`));
  });

  it('suggests narrow mounts and the docker arguments', () => {
    assert.match(report, /### Suggested narrow mounts/);
    assert.ok(report.includes(`| \`${REPO}/node_modules/.pnpm\` | \`/workspace/node_modules/.pnpm\` | ro | pnpm store |`), report);
    assert.match(report, /### Docker arguments\n\n```sh\n-v \/Users\/dev\/shop\/packages\/checkout:\/workspace:rw/);
    assert.ok(report.includes(`\`${REPO}/tsconfig.base.json\``));
    assert.ok(report.includes(`no mount for the folder \`${REPO}\``));
  });

  it('shell-quotes the docker arguments for the copy button', () => {
    assert.strictEqual(
      dockerArguments(widenedStatus()),
      `-v ${NARROW}:/workspace:rw -v ${REPO}/node_modules/.pnpm:/workspace/node_modules/.pnpm:ro -v '/Users/dev/it'\\''s here:/x:ro'`,
    );
    assert.strictEqual(shellQuote('a b'), "'a b'");
    assert.strictEqual(dockerArguments(normalStatus()), '');
  });

  it('shows the union, shadowed entries and worktrees', () => {
    assert.match(report, /## Effective union/);
    assert.ok(report.includes(`- \`${NARROW}\` — inside \`${REPO}\`, adds nothing`));
    assert.ok(report.includes('`/Users/dev/shop-hotfix` — request'));
  });

  it('says so when nothing widened', () => {
    const quiet = renderReport(normalStatus());
    assert.match(quiet, /The union did not widen: 2 roots \\\(1 folder\\\)\./);
    assert.ok(!quiet.includes('What the union exposes'));
    assert.ok(!quiet.includes('What widened'));
  });

  it('says the inventory is being counted', () => {
    const pending = renderReport({ ...widenedStatus(), inventory: null, inventory_pending: true });
    assert.match(pending, /Counting files, credentials and history/);
  });
});
