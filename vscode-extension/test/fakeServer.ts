/**
 * A tiny LSP server for the client tests, speaking JSON-RPC on stdio.
 * FAKE_MODE=status  : sends rootguard/status, answers rootguard/explain, then
 *                     asks an approval and reports the answer in a new status.
 * FAKE_MODE=exit    : exits at once with a message on stderr (a broken install).
 * FAKE_MODE=crash   : runs, then exits unexpectedly after the first status.
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
connection.onNotification('initialized', async () => {
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
