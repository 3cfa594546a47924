/** The widening report in a webview, with a button that copies the docker arguments. */
import * as vscode from 'vscode';
import { dockerArguments, renderReport } from './report';
import { Status } from './types';

/** What the report's Acknowledge and Withdraw acknowledgement buttons do (the notification's do the same). */
export interface ReportActions {
  acknowledge(): Promise<unknown>;
  withdraw(): Promise<unknown>;
}

export class ReportView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private status: Status | undefined;

  constructor(private readonly actions?: ReportActions) {}

  /** Opens (or reveals) the report for `status`. */
  async show(status: Status): Promise<void> {
    this.status = status;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('rootguard.report', 'Root Guard: Widening Report', vscode.ViewColumn.Active, {
        enableScripts: true,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((message: { type?: string }) => this.onMessage(message));
    } else {
      this.panel.reveal();
    }
    await this.render();
  }

  /** Re-renders an open report when a new status arrives. */
  async update(status: Status): Promise<void> {
    if (this.panel) {
      this.status = status;
      await this.render();
    }
  }

  dispose(): void {
    this.panel?.dispose();
  }

  private async render(): Promise<void> {
    if (!this.panel || !this.status) {
      return;
    }
    const markdown = renderReport(this.status);
    const body = await markdownToHtml(markdown);
    const action = this.status.acknowledged === false ? 'acknowledge' : this.status.withdrawable ? 'withdraw' : null;
    this.panel.webview.html = page(this.panel.webview.cspSource, body, dockerArguments(this.status) !== '', action);
  }

  private async onMessage(message: { type?: string }): Promise<void> {
    if (!this.status) {
      return;
    }
    if (message.type === 'acknowledge' && this.actions) {
      await this.actions.acknowledge();
    } else if (message.type === 'withdraw' && this.actions) {
      await this.actions.withdraw();
    } else if (message.type === 'copyDocker') {
      await vscode.env.clipboard.writeText(dockerArguments(this.status));
      void vscode.window.showInformationMessage('Root Guard: docker arguments copied.');
    } else if (message.type === 'openMarkdown') {
      const document = await vscode.workspace.openTextDocument({ language: 'markdown', content: renderReport(this.status) });
      await vscode.window.showTextDocument(document, { preview: true });
    }
  }
}

/** Uses the built-in Markdown extension's renderer; falls back to preformatted text. */
async function markdownToHtml(markdown: string): Promise<string> {
  try {
    await vscode.extensions.getExtension('vscode.markdown-language-features')?.activate();
    const html = await vscode.commands.executeCommand<string>('markdown.api.render', markdown);
    if (typeof html === 'string' && html.length > 0) {
      return html;
    }
  } catch {
    // the markdown extension is disabled
  }
  return `<pre>${escapeHtml(markdown)}</pre>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length: 32 }, () => chars[Math.floor(Math.random() * chars.length)]).join('');
}

function page(cspSource: string, body: string, hasDocker: boolean, action: 'acknowledge' | 'withdraw' | null): string {
  const n = nonce();
  const copy = hasDocker ? '<button id="copy" class="secondary">Copy docker arguments</button>' : '';
  const main = action === 'acknowledge'
    ? '<button id="acknowledge">Acknowledge</button>'
    : action === 'withdraw' ? '<button id="withdraw" class="secondary">Withdraw acknowledgement</button>' : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${n}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Root Guard: Widening Report</title>
<style>
  body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1.5em 2em; line-height: 1.5; }
  code, pre { font-family: var(--vscode-editor-font-family); }
  pre { background: var(--vscode-textCodeBlock-background); padding: .6em; white-space: pre-wrap; word-break: break-all; }
  table { border-collapse: collapse; }
  th, td { border: 1px solid var(--vscode-panel-border, #8884); padding: .2em .6em; }
  blockquote { border-left: 4px solid var(--vscode-editorWarning-foreground); margin: 0; padding: .2em 1em; background: var(--vscode-textBlockQuote-background); }
  .toolbar { position: sticky; top: 0; padding: .6em 0; background: var(--vscode-editor-background); display: flex; gap: .5em; }
  button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: .35em .9em; cursor: pointer; }
  button:hover { background: var(--vscode-button-hoverBackground); }
  button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
</style>
</head>
<body>
<div class="toolbar">${main}${copy}<button id="markdown" class="secondary">Open as Markdown</button></div>
${body}
<script nonce="${n}">
  const vscode = acquireVsCodeApi();
  for (const [id, type] of [['acknowledge', 'acknowledge'], ['withdraw', 'withdraw'], ['copy', 'copyDocker'], ['markdown', 'openMarkdown']]) {
    const button = document.getElementById(id);
    if (button) { button.addEventListener('click', () => vscode.postMessage({ type })); }
  }
</script>
</body>
</html>`;
}
