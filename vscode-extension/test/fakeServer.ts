/**
 * A tiny LSP server for the client tests, speaking JSON-RPC on stdio.
 * FAKE_MODE=status  : sends rootguard/status, answers rootguard/explain, then
 *                     asks an approval and reports the answer in a new status.
 * FAKE_MODE=exit    : exits at once with a message on stderr (a broken install).
 * FAKE_MODE=crash   : runs, then exits unexpectedly after the first status.
 * FAKE_MODE=widen   : starts wide: a widened status (counting), the plain
 *                     window/showMessage warning, the status with the count,
 *                     then the warning as window/showMessageRequest with
 *                     "Show report"/"Acknowledge"; records rootguard.acknowledge.
 */
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const mode = process.env.FAKE_MODE ?? 'status';
if (mode === 'exit') {
  process.stderr.write('/usr/bin/python3: No module named lsp_bridge\n');
  process.exit(1);
}

const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
let folders: string[] = [];

function status(summary: string): unknown {
  return { version: 1, session: 'fake', roots: folders, union: folders, entries: [], shadowed: [], worktrees: [], mounts: null, widened: false, summary, warnings: [] };
}

connection.onRequest('initialize', (params: any) => {
  folders = (params.workspaceFolders ?? []).map((f: { uri: string }) => decodeURIComponent(new URL(f.uri).pathname));
  process.stderr.write(`fake server: initialize with ${folders.length} folder(s)\n`);
  return { capabilities: {}, serverInfo: { name: 'fake-rootguard' } };
});
let acknowledged = 0;
connection.onRequest('workspace/executeCommand', (params: any) => {
  if (params.command === 'rootguard.acknowledge') {
    acknowledged += 1;
    void connection.sendNotification('rootguard/status', status(`acknowledged ${acknowledged}`));
    return { acknowledged: true };
  }
  throw new Error(`unknown command ${params.command}`);
});

function widened(inventory: boolean): unknown {
  return {
    ...(status('widened') as object),
    widened: true,
    widening: [{ folder: '/src/shop', entry: '/src/shop/packages/checkout', kind: 'ancestor' }],
    inventory: inventory ? { widens: true, files_before: 10, files_after: 62, ratio: 6.2, credentials: [{ path: '/src/shop/.env', count: 1 }], git: [] } : null,
    inventory_pending: !inventory,
  };
}

async function widen(): Promise<void> {
  await connection.sendNotification('rootguard/status', widened(false));
  await connection.sendNotification('window/showMessage', { type: 2, message: "Root Guard: the agent's file boundary widened. /src/shop widens /src/shop/packages/checkout\n52 more files" });
  await connection.sendNotification('rootguard/status', widened(true));
  const answer = await connection.sendRequest('window/showMessageRequest', {
    type: 2,
    message: "Root Guard: adding shop widened the agent's boundary ×6.2 — +52 files, 1 secrets file",
    actions: [{ title: 'Show report' }, { title: 'Acknowledge' }],
  });
  await connection.sendNotification('rootguard/status', status(`answer: ${JSON.stringify(answer)}; acknowledged ${acknowledged}`));
}

connection.onNotification('initialized', async () => {
  if (mode === 'widen') {
    await widen();
    return;
  }
  await connection.sendNotification('rootguard/status', status('started'));
  if (mode === 'crash') {
    setTimeout(() => process.exit(7), 50);
    return;
  }
  const answer = await connection.sendRequest('window/showMessageRequest', {
    type: 2,
    message: 'fake: write .env?',
    actions: [{ title: 'Allow once' }, { title: 'Allow for this session' }, { title: 'Deny' }],
  });
  await connection.sendNotification('rootguard/status', status(`answer: ${JSON.stringify(answer)}`));
});
connection.onRequest('rootguard/explain', (params: any) => ({
  path: params.path,
  decisions: [{ op: 'read', decision: 'allow', rule: null, reason: `asked with op ${JSON.stringify(params.op)}` }],
}));
connection.onRequest('shutdown', () => null);
connection.onNotification('exit', () => process.exit(0));
connection.listen();
