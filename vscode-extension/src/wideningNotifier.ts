/**
 * The extension's own widening notification: one line, "Show report" and
 * "Acknowledge", shown once per widening — when the status says the union is
 * wider than what the user acknowledged, or when the server sends its own
 * widening warning (which this replaces, so the user sees one notification).
 */
import * as vscode from 'vscode';
import { Status } from './types';
import { ACKNOWLEDGE, isUnacknowledgedWidening, SHOW_REPORT, shouldNotify, wideningKey, wideningLine } from './widening';

export interface NotifierDeps {
  status(): Status | null;
  showReport(): Promise<unknown>;
  /** Asks the server to record the current union as accepted. */
  acknowledge(): Promise<unknown>;
  log(message: string): void;
}

export class WideningNotifier {
  private shownKey: string | undefined;
  private choice: Promise<string | undefined> | undefined;

  constructor(private readonly deps: NotifierDeps) {}

  /** Called with every status: notifies once per unacknowledged widening, once its count is in. */
  onStatus(status: Status | null): void {
    if (!status) {
      return;
    }
    if (!isUnacknowledgedWidening(status)) {
      this.shownKey = undefined; // narrowed or acknowledged: a later widening is news again
      return;
    }
    if (shouldNotify(status)) {
      void this.show(wideningKey(status), wideningLine(status));
    }
  }

  /** The server's own widening warning: shown as this notification (once), resolving to the button chosen. */
  fromServer(message: string): Promise<string | undefined> {
    const status = this.deps.status();
    const firstLine = message.split(/\r?\n/, 1)[0];
    this.deps.log(`The server warned: ${message}`);
    if (isUnacknowledgedWidening(status)) {
      return this.show(wideningKey(status), status.inventory ? wideningLine(status) : firstLine);
    }
    return this.show(`message:${firstLine}`, firstLine);
  }

  /** The Acknowledge action, also reachable from the Command Palette. */
  async acknowledge(): Promise<void> {
    try {
      await this.deps.acknowledge();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      void vscode.window.showErrorMessage(`Root Guard: the acknowledgement was not recorded: ${reason}`);
      return;
    }
    void vscode.window.showInformationMessage("Root Guard: the agent's current boundary is acknowledged; only a wider one warns again.");
  }

  private show(key: string, text: string): Promise<string | undefined> {
    if (this.shownKey === key && this.choice) {
      return this.choice;
    }
    this.shownKey = key;
    this.choice = (async () => {
      const choice = await vscode.window.showWarningMessage(text, SHOW_REPORT, ACKNOWLEDGE);
      if (choice === SHOW_REPORT) {
        await this.deps.showReport();
      } else if (choice === ACKNOWLEDGE) {
        await this.acknowledge();
      }
      return choice;
    })();
    return this.choice;
  }
}
