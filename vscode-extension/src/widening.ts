/**
 * Pure rules for the widening notification: when a status calls for one, which
 * widening it is (so each is announced once), its one-line text, and how to
 * recognise the server's own widening messages. No `vscode` import.
 */
import { Status } from './types';

/** The server's `workspace/executeCommand` that records the current union as accepted. */
export const SERVER_ACKNOWLEDGE_COMMAND = 'rootguard.acknowledge';
export const SHOW_REPORT = 'Show report';
export const ACKNOWLEDGE = 'Acknowledge';

/** True when the status reports a widening the user has not acknowledged. */
export function isUnacknowledgedWidening(status: Status | null | undefined): status is Status {
  return !!status && status.widened === true && status.acknowledged !== true;
}

/** True when the notification should go out now: widened, not acknowledged, and the count is in. */
export function shouldNotify(status: Status | null | undefined): status is Status {
  return isUnacknowledgedWidening(status) && status.inventory_pending !== true;
}

/**
 * Identifies one widening: the union and what widened it. The same widening
 * seen again (a later status, the inventory arriving) has the same key.
 */
export function wideningKey(status: Status): string {
  const union = [...status.union].sort();
  const widening = (status.widening ?? []).map((w) => `${w.folder}>${w.entry ?? ''}`).sort();
  return JSON.stringify([union, widening]);
}

/**
 * One line a person reads whole, as the server words it (`status.warning_line`,
 * rendered once in Python): `Root Guard: adding shop widened the agent's boundary
 * ×179: +60,660 files, 2 secrets files, .git (53 commits)`.
 */
export function wideningLine(status: Status): string {
  return status.warning_line || "Root Guard: the workspace folders widened the agent's boundary";
}

/** True for a server `window/showMessageRequest` that is the widening warning (it offers these two actions). */
export function isWideningRequest(actions: ReadonlyArray<{ title: string }> | undefined): boolean {
  const titles = new Set((actions ?? []).map((a) => a.title));
  return titles.has(ACKNOWLEDGE) && titles.has(SHOW_REPORT);
}

/** True for a server `window/showMessage` that announces a widening (the extension shows its own). */
export function isWideningMessage(message: string): boolean {
  const first = message.split(/\r?\n/, 1)[0];
  return /^Root Guard: .*\bwidened\b/.test(first);
}
