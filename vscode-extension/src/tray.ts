/**
 * Starting the tray from the editor and telling the user what really
 * happened: the tray is spawned detached with its output in a log file, then
 * watched briefly — its socket appearing means it runs; an early exit means it
 * failed, and its own last words are shown. No `vscode` import.
 */
import * as child_process from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { CommandLine, describe } from './serverCommand';

export const SOCKET_ENV = 'ROOTGUARD_TRAY_SOCKET';
/** How long to watch a new tray for its socket or an early exit. */
export const SETTLE_MS = 8000;

export type TrayResult =
  | { kind: 'running'; pid: number }
  | { kind: 'starting'; pid: number }
  | { kind: 'exited'; code: number | null; signal: string | null; output: string }
  | { kind: 'unstartable'; error: string };

/**
 * Where the tray's socket may be (lsp_bridge/approvals/runtime.py:
 * `$ROOTGUARD_TRAY_SOCKET`, else platformdirs' user runtime directory).
 */
export function traySocketCandidates(env: NodeJS.ProcessEnv, platform: string, uid: number, home: string): string[] {
  const override = env[SOCKET_ENV];
  if (override) {
    return [path.resolve(override)];
  }
  if (platform === 'win32') {
    return [];
  }
  if (platform === 'darwin') {
    return [path.join(home, 'Library', 'Caches', 'TemporaryItems', 'rootguard', 'tray.sock')];
  }
  const dirs = env.XDG_RUNTIME_DIR ? [env.XDG_RUNTIME_DIR] : [`/run/user/${uid}`, `/var/run/user/${uid}`, `/tmp/runtime-${uid}`];
  return dirs.map((d) => path.join(d, 'rootguard', 'tray.sock'));
}

/** The last few non-empty lines of the tray's output, for a notification. */
export function lastLines(output: string, count = 3, width = 300): string {
  const lines = output.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(-count);
  const text = lines.join(' — ');
  return text.length > width ? `…${text.slice(-width)}` : text;
}

/** True when the output says the tray (or its Qt dependency) is not installed. */
export function looksNotInstalled(output: string): boolean {
  return /No module named ['"]?(tray|PySide6|lsp_bridge)|ENOENT|not found/i.test(output);
}

export interface TrayMessage {
  level: 'info' | 'error';
  text: string;
  /** Offer Install Tray (the extension's own environment). */
  offerInstall: boolean;
  /** Offer the tray's log file. */
  offerLog: boolean;
}

/** What to tell the user about a start attempt. */
export function describeTrayResult(line: CommandLine, result: TrayResult): TrayMessage {
  const command = describe(line);
  switch (result.kind) {
    case 'running':
      return { level: 'info', text: `Root Guard: the tray is running (pid ${result.pid}).`, offerInstall: false, offerLog: false };
    case 'starting':
      return {
        level: 'info',
        text: `Root Guard: the tray was started (pid ${result.pid}, \`${command}\`) but has not opened its socket yet; its output is in the tray log.`,
        offerInstall: false,
        offerLog: true,
      };
    case 'unstartable':
      return {
        level: 'error',
        text: `Root Guard: could not start the tray (\`${command}\`): ${result.error}.`,
        offerInstall: looksNotInstalled(result.error),
        offerLog: false,
      };
    case 'exited': {
      const said = lastLines(result.output);
      const how = result.signal ? `killed by ${result.signal}` : `exit code ${result.code}`;
      if (result.code === 0 && !result.signal) {
        return { level: 'info', text: `Root Guard: the tray exited at once${said ? `: ${said}` : '.'}`, offerInstall: false, offerLog: true };
      }
      return {
        level: 'error',
        text: `Root Guard: the tray did not start (${how})${said ? `: ${said}` : ` and printed nothing (\`${command}\`).`}`,
        offerInstall: looksNotInstalled(said),
        offerLog: true,
      };
    }
  }
}

export interface StartOptions {
  /** The tray's stdout and stderr go here (it outlives the editor). */
  logFile: string;
  sockets: readonly string[];
  settleMs?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * Spawns the tray detached and waits until its socket appears (running), it
 * exits (failed, with its output), or `settleMs` passes (still starting).
 */
export function startTray(line: CommandLine, options: StartOptions): Promise<TrayResult> {
  const settleMs = options.settleMs ?? SETTLE_MS;
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  const fd = fs.openSync(options.logFile, 'w');
  const existed = new Set(options.sockets.filter((s) => fs.existsSync(s)));
  return new Promise<TrayResult>((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let poll: NodeJS.Timeout | undefined;
    const finish = (result: TrayResult) => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      fs.closeSync(fd);
      child.unref();
      resolve(result);
    };
    const child = child_process.spawn(line.command, line.args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: options.env ?? process.env,
      windowsHide: true,
    });
    child.once('error', (error) => finish({ kind: 'unstartable', error: error.message }));
    child.once('exit', (code, signal) => finish({ kind: 'exited', code, signal, output: readTail(options.logFile) }));
    child.once('spawn', () => {
      poll = setInterval(() => {
        if (options.sockets.some((s) => !existed.has(s) && fs.existsSync(s))) {
          finish({ kind: 'running', pid: child.pid ?? 0 });
        }
      }, 100);
      timer = setTimeout(() => finish({ kind: 'starting', pid: child.pid ?? 0 }), settleMs);
    });
  });
}

function readTail(file: string): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-8000);
  } catch {
    return '';
  }
}
