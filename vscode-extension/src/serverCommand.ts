/**
 * Pure selection of the command lines that start the Root Guard language
 * server, the tray and the guarded MCP server. No `vscode` import.
 */

export interface CommandLine {
  command: string;
  args: string[];
}

export interface ServerCommandInputs {
  /** `rootguard.serverCommand`; empty or absent means "choose for me". */
  serverCommand?: readonly string[] | null;
  /** `rootguard.python`; empty or absent means "not set". */
  python?: string | null;
  /** Absolute path of the `rootguard` console script when it is on PATH. */
  rootguardOnPath?: string | null;
  /** The interpreter selected in the Python extension (command line), if any. */
  pythonExtension?: readonly string[] | null;
}

export interface Selection extends CommandLine {
  /** Which input decided, for the log. */
  source: 'setting' | 'python-setting' | 'path' | 'python-extension' | 'default';
}

export const SERVER_MODULE = 'lsp_bridge';
export const TRAY_MODULE = 'tray';
export const CLI_MODULE = 'lsp_bridge.cli';
export const DEFAULT_PYTHON = 'python3';

/**
 * The server command line. Order: `rootguard.serverCommand`, then
 * `rootguard.python -m lsp_bridge`, then the `rootguard` script on PATH, then
 * the Python extension's interpreter, then `python3 -m lsp_bridge`.
 */
export function selectServerCommand(inputs: ServerCommandInputs): Selection {
  const configured = (inputs.serverCommand ?? []).filter((part) => typeof part === 'string');
  if (configured.length > 0 && configured[0].trim() !== '') {
    return { command: configured[0], args: configured.slice(1), source: 'setting' };
  }
  const python = inputs.python?.trim();
  if (python) {
    return { command: python, args: ['-m', SERVER_MODULE], source: 'python-setting' };
  }
  if (inputs.rootguardOnPath) {
    return { command: inputs.rootguardOnPath, args: ['lsp'], source: 'path' };
  }
  const interpreter = (inputs.pythonExtension ?? []).filter(Boolean);
  if (interpreter.length > 0) {
    return { command: interpreter[0], args: [...interpreter.slice(1), '-m', SERVER_MODULE], source: 'python-extension' };
  }
  return { command: DEFAULT_PYTHON, args: ['-m', SERVER_MODULE], source: 'default' };
}

/**
 * How to run another `rootguard` front end with the same installation as the
 * server: `<python> -m <module>` when the server is `<python> -m lsp_bridge`,
 * `<script> <subcommand>` when it is the `rootguard` script.
 */
function sibling(server: CommandLine, subcommand: string, module: string, moduleArgs: string[]): CommandLine {
  const all = [server.command, ...server.args];
  const m = all.indexOf('-m');
  if (m > 0 && all[m + 1] === SERVER_MODULE) {
    return { command: server.command, args: [...all.slice(1, m), '-m', module, ...moduleArgs] };
  }
  if (isRootguardScript(server.command)) {
    return { command: server.command, args: [subcommand] };
  }
  return { command: 'rootguard', args: [subcommand] };
}

/** The tray: `<python> -m tray`, or `rootguard tray`. */
export function trayCommand(server: CommandLine): CommandLine {
  return sibling(server, 'tray', TRAY_MODULE, []);
}

/** The guarded MCP server with one `--root` per folder. */
export function mcpCommand(server: CommandLine, folders: readonly string[]): CommandLine {
  const base = sibling(server, 'mcp', CLI_MODULE, ['mcp']);
  return { command: base.command, args: [...base.args, ...folders.flatMap((f) => ['--root', f])] };
}

/** True for `rootguard`, `/x/bin/rootguard` or `C:\x\rootguard.exe`. */
export function isRootguardScript(command: string): boolean {
  const name = command.split(/[\\/]/).pop() ?? '';
  return /^rootguard(\.exe|\.cmd)?$/i.test(name);
}

/**
 * Finds an executable on PATH without running anything: the first
 * `dir/name(ext)` for which `isExecutable` is true.
 */
export function findOnPath(
  name: string,
  pathVariable: string | undefined,
  platform: string,
  isExecutable: (candidate: string) => boolean,
  pathExt = '.EXE;.CMD;.BAT',
): string | null {
  const windows = platform === 'win32';
  const separator = windows ? ';' : ':';
  const extensions = windows ? ['', ...pathExt.split(';').map((e) => e.toLowerCase())] : [''];
  for (const dir of (pathVariable ?? '').split(separator)) {
    if (!dir) {
      continue; // an empty PATH entry means the current directory: never trust it
    }
    for (const ext of extensions) {
      const candidate = `${dir.replace(/[\\/]+$/, '')}${windows ? '\\' : '/'}${name}${ext}`;
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return null;
}

/** A command line as one readable string for messages and logs. */
export function describe(line: CommandLine): string {
  return [line.command, ...line.args].map((part) => (/[\s"']/.test(part) ? JSON.stringify(part) : part)).join(' ');
}
