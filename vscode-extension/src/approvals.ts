/**
 * Approvals without a tray: the server's `window/showMessageRequest` prompts
 * ("Allow once", "Allow for this session", "Deny") become VS Code
 * notifications. Closing the notification answers Deny, never an allow.
 */
import * as vscode from 'vscode';

export const SHOW_MESSAGE_REQUEST = 'window/showMessageRequest';
export const DENY = 'Deny';

export interface MessageActionItem {
  title: string;
  [key: string]: unknown;
}

export interface ShowMessageRequestParams {
  type: number; // 1 error, 2 warning, 3 info, 4 log, 5 debug
  message: string;
  actions?: MessageActionItem[];
}

/**
 * Shows the prompt and returns the chosen action. When the user dismisses it,
 * returns the "Deny" action if the server offered one, else null (which a
 * server must treat as no consent).
 */
export async function answerShowMessageRequest(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
  const actions = params.actions ?? [];
  const show = params.type === 1
    ? vscode.window.showErrorMessage
    : params.type === 2
      ? vscode.window.showWarningMessage
      : vscode.window.showInformationMessage;
  let chosen: MessageActionItem | undefined;
  try {
    chosen = await show<MessageActionItem>(params.message, ...actions);
  } catch {
    chosen = undefined;
  }
  if (chosen !== undefined && actions.includes(chosen)) {
    return chosen;
  }
  return actions.find((a) => a.title === DENY) ?? null;
}
