import * as assert from 'assert';
import * as vscode from 'vscode';
import { MCP_PROVIDER_ID, registerMcpProvider } from '../src/mcp';
import * as stubModule from './stubs/vscode';
import { stub } from './stubs/vscode';

/** Stands in for VS Code 1.101's McpStdioServerDefinition. */
class FakeDefinition {
  constructor(
    readonly label: string,
    readonly command: string,
    readonly args: string[],
    readonly env: Record<string, string>,
    readonly version?: string,
  ) {}
}

function installMcpApi(): { providers: Map<string, any> } {
  const providers = new Map<string, any>();
  (stubModule as any).lm = {
    registerMcpServerDefinitionProvider(id: string, provider: any) {
      providers.set(id, provider);
      return new vscode.Disposable(() => providers.delete(id));
    },
  };
  (stubModule as any).McpStdioServerDefinition = FakeDefinition;
  return { providers };
}

const server = async () => ({ command: '/venv/bin/python', args: ['-m', 'lsp_bridge'] });

describe('guarded MCP server definition', () => {
  let subscriptions: vscode.Disposable[];
  beforeEach(() => {
    stub.reset();
    subscriptions = [];
  });
  afterEach(() => subscriptions.forEach((d) => d.dispose()));

  it('is not offered (and does not throw) when VS Code has no MCP API', () => {
    assert.strictEqual(registerMcpProvider(server, '0.1.0', subscriptions), false);
    assert.strictEqual(subscriptions.length, 0);
  });

  it('is not offered (and does not throw) when registering is refused', () => {
    (stubModule as any).lm = {
      registerMcpServerDefinitionProvider() {
        throw new Error("Extension 'rootguard.rootguard' CANNOT use API proposal: mcpConfigurationProvider.");
      },
    };
    (stubModule as any).McpStdioServerDefinition = FakeDefinition;
    assert.strictEqual(registerMcpProvider(server, '0.1.0', subscriptions), false);
    assert.strictEqual(subscriptions.length, 0);
  });

  it("offers `rootguard mcp` with the window's folders as roots", async () => {
    const { providers } = installMcpApi();
    stub.setFolders(['/Users/dev/shop/packages/checkout', '/Users/dev/shop']);
    assert.strictEqual(registerMcpProvider(server, '0.1.0', subscriptions), true);
    const provider = providers.get(MCP_PROVIDER_ID);
    const [definition] = await provider.provideMcpServerDefinitions();
    assert.ok(definition instanceof FakeDefinition);
    assert.strictEqual(definition.label, 'Root Guard guarded files');
    assert.strictEqual(definition.command, '/venv/bin/python');
    assert.deepStrictEqual(definition.args, [
      '-m', 'lsp_bridge.cli', 'mcp', '--root', '/Users/dev/shop/packages/checkout', '--root', '/Users/dev/shop',
    ]);
    assert.match(definition.version ?? '', /^0\.1\.0\+[0-9a-f]{8}$/);
  });

  it('matches the id contributed in package.json', () => {
    const manifest = require('../../package.json');
    assert.deepStrictEqual(manifest.contributes.mcpServerDefinitionProviders.map((p: { id: string }) => p.id), [MCP_PROVIDER_ID]);
    // VS Code 1.100 (code-server 4.100) looked the id up under its earlier name
    assert.deepStrictEqual(manifest.contributes.modelContextServerCollections.map((p: { id: string }) => p.id), [MCP_PROVIDER_ID]);
    assert.ok(!('extensionDependencies' in manifest), 'the Python extension must never be a hard dependency');
  });

  it('re-announces when the workspace folders or the settings change', async () => {
    const { providers } = installMcpApi();
    stub.setFolders(['/a']);
    registerMcpProvider(server, '0.1.0', subscriptions);
    const provider = providers.get(MCP_PROVIDER_ID);
    let announced = 0;
    provider.onDidChangeMcpServerDefinitions(() => (announced += 1));
    stub.setFolders(['/a', '/b']);
    stub.foldersChanged.fire({ added: [], removed: [] });
    assert.strictEqual(announced, 1);
    const [definition] = await provider.provideMcpServerDefinitions();
    assert.deepStrictEqual(definition.args.slice(-4), ['--root', '/a', '--root', '/b']);
    stub.changeSettings({ 'rootguard.mcp.enabled': false });
    assert.strictEqual(announced, 2);
    assert.deepStrictEqual(await provider.provideMcpServerDefinitions(), []);
  });

  it('offers nothing without a folder', async () => {
    const { providers } = installMcpApi();
    registerMcpProvider(server, '0.1.0', subscriptions);
    assert.deepStrictEqual(await providers.get(MCP_PROVIDER_ID).provideMcpServerDefinitions(), []);
  });

  it('offers nothing when the server cannot start, and says why once', async () => {
    const { providers } = installMcpApi();
    stub.setFolders(['/a']);
    const logged: string[] = [];
    const why = 'the MCP SDK does not load with Python 3.10.4 on darwin/arm64';
    registerMcpProvider(server, '0.1.0', subscriptions, () => null, async () => why, (m) => logged.push(m));
    const provider = providers.get(MCP_PROVIDER_ID);
    assert.deepStrictEqual(await provider.provideMcpServerDefinitions(), []);
    assert.deepStrictEqual(await provider.provideMcpServerDefinitions(), []);
    assert.strictEqual(stub.shown.filter((s) => s.message.includes(why)).length, 1);
    assert.match(logged[0], /not offered: the MCP SDK does not load/);
  });
});
