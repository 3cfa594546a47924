import * as assert from 'assert';
import { applyArgs, applySummary, hasProposal, previewText, splitCommandLine, traceSummary, TraceResult } from '../src/trace';

const SNIPPET = `# Proposed by \`rootguard trace\` for: node build.js
[[paths]]
id = "trace-tsconfig.base.json"  # configuration file
path = "~/src/shop/tsconfig.base.json"
policies = { read = "allow", write = "deny" }
`;

function result(): TraceResult {
  return {
    command: ['node', 'build.js'],
    exit_code: 0,
    outside: [],
    proposed: { paths: [{ id: 'trace-tsconfig.base.json', path: '~/src/shop/tsconfig.base.json', kind: 'file', group: 'config' }], mounts: [] },
    refused: [{ path: '/srv/src/shop/.env', reason: 'credential file (by name)' }],
    quiet_failures: [
      { path: '/srv/src/shop/.env', name: '.env*', status: 'refused' },
      { path: '/srv/src/shop/tsconfig.base.json', name: 'tsconfig*.json', status: 'proposed' },
      { path: '/srv/src/shop/.prettierrc', name: '.prettierrc*', status: 'not proposed' },
    ],
    user_file: '~/.config/rootguard/config.toml',
    snippet: SNIPPET,
  };
}

describe('trace a command', () => {
  it('splits a command line like a shell', () => {
    assert.deepStrictEqual(splitCommandLine(`sh -c 'node build.js && git status'`), ['sh', '-c', 'node build.js && git status']);
    assert.deepStrictEqual(splitCommandLine(`echo "a \\"b\\"" c\\ d ''`), ['echo', 'a "b"', 'c d', '']);
    assert.deepStrictEqual(splitCommandLine('  npx   tsc  '), ['npx', 'tsc']);
    assert.throws(() => splitCommandLine(`echo 'open`), /unterminated ' quote/);
  });

  it('summarises grants, refusals and quiet failures in one line', () => {
    assert.strictEqual(traceSummary(result()),
      'Root Guard trace: node build.js exited 0; 1 grant proposed; 1 refused (.env); 2 quiet failures');
  });

  it('previews refusals and quiet failures as comments above the snippet', () => {
    const text = previewText(result());
    assert.ok(text.startsWith('# needed but refused (never proposed): /srv/src/shop/.env: credential file (by name)\n'));
    assert.ok(text.includes('# quiet failure: looked for /srv/src/shop/.prettierrc [.prettierrc*] (not proposed)\n'));
    assert.ok(text.endsWith(SNIPPET));
  });

  it('offers Add only when something is proposed', () => {
    assert.ok(hasProposal(result()));
    const empty = { ...result(), proposed: { paths: [], mounts: [] } };
    assert.ok(!hasProposal(empty));
  });

  it('merges through `rootguard trace --apply -` with the traced roots', () => {
    assert.deepStrictEqual(applyArgs({ ...result(), roots: ['/p/app'] }, ['/w']),
      ['trace', '--json', '--root', '/p/app', '--apply', '-']);
    assert.deepStrictEqual(applyArgs(result(), ['/w']), ['trace', '--json', '--root', '/w', '--apply', '-']);
  });

  it('says what the merge did', () => {
    assert.strictEqual(applySummary({ written: { user_file: '/u.toml', added: ['a', 'b'], reused: { c: 'c' }, changed: true } }),
      'Root Guard: added 2 rules to /u.toml, 1 already there');
    assert.strictEqual(applySummary({ written: { user_file: '/u.toml', added: [], reused: { c: 'c' }, changed: false } }),
      'Root Guard: /u.toml unchanged (every proposed rule is already there)');
  });
});
