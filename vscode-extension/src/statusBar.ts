/** Applies the pure status rendering to a VS Code status bar item. */
import * as os from 'os';
import * as vscode from 'vscode';
import { renderStatus, StatusView } from './status';
import { ServerState } from './types';

export const STATUS_ITEM_ID = 'rootguard.status';

const BACKGROUNDS: Record<'warning' | 'error', string> = {
  warning: 'statusBarItem.warningBackground',
  error: 'statusBarItem.errorBackground',
};

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Left, 100);
    this.item.name = 'Root Guard';
    this.show({ kind: 'starting' }, 0);
    this.item.show();
  }

  /** Renders `state`; `folderCount` is the window's number of workspace folders. */
  show(state: ServerState, folderCount: number): StatusView {
    const view = renderStatus(state, folderCount, os.homedir());
    this.item.text = view.text;
    const tooltip = new vscode.MarkdownString(view.tooltip, true);
    tooltip.isTrusted = false;
    this.item.tooltip = tooltip;
    this.item.backgroundColor = view.background ? new vscode.ThemeColor(BACKGROUNDS[view.background]) : undefined;
    this.item.command = view.command;
    this.item.accessibilityInformation = { label: view.accessibleText, role: 'button' };
    return view;
  }

  dispose(): void {
    this.item.dispose();
  }
}
