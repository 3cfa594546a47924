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
  /** The interpreter selected in the Python extension (command line), when it is Python >= 3.11. */
  pythonExtension?: readonly string[] | null;
  /** A `python3` >= 3.11 found on PATH, if any. */
  pythonOnPath?: string | null;
  /** `bundled/tool/launch.py` when the extension carries the server and its dependencies. */
  bundle?: string | null;
}

export interface Selection extends CommandLine {
  /** Which input decided, for the log. */
  source: 'setting' | 'python-setting' | 'python-extension' | 'python-on-path' | 'path' | 'default';
}

export const SERVER_MODULE = 'lsp_bridge';
export const TRAY_MODULE = 'tray';
export const CLI_MODULE = 'lsp_bridge.cli';
export const DEFAULT_PYTHON = 'python3';
export const MINIMUM_PYTHON: readonly [number, number] = [3, 11];
/** The file name of the bundle's launcher (`bundled/tool/launch.py`). */
export const LAUNCHER = 'launch.py';

/** `<python…> -m module`, or `<python…> launch.py module` with the bundle. */
function runModule(python: readonly string[], module: string, bundle: string | null | undefined): string[] {
  return bundle ? [...python, bundle, module] : [...python, '-m', module];
}

function line(all: string[], source: Selection['source']): Selection {
  return { command: all[0], args: all.slice(1), source };
}

/**
 * The server command line, or null when the extension carries the bundled
 * server but no Python >= 3.11 was found to run it.
 *
 * Order: `rootguard.serverCommand`; then `rootguard.python`; then, with the
 * bundle, the Python extension's interpreter or a `python3` on PATH running
 * the bundled server. Without a bundle (a development build): the `rootguard`
 * script on PATH, the Python extension's interpreter, `python3 -m lsp_bridge`.
 */
export function selectServerCommand(inputs: ServerCommandInputs): Selection | null {
  const configured = (inputs.serverCommand ?? []).filter((part) => typeof part === 'string');
  if (configured.length > 0 && configured[0].trim() !== '') {
    return { command: configured[0], args: configured.slice(1), source: 'setting' };
  }
  const bundle = inputs.bundle || null;
  const python = inputs.python?.trim();
  if (python) {
    return line(runModule([python], SERVER_MODULE, bundle), 'python-setting');
  }
  const interpreter = (inputs.pythonExtension ?? []).filter(Boolean);
  if (bundle) {
    if (interpreter.length > 0) {
      return line(runModule(interpreter, SERVER_MODULE, bundle), 'python-extension');
    }
    return inputs.pythonOnPath ? line(runModule([inputs.pythonOnPath], SERVER_MODULE, bundle), 'python-on-path') : null;
  }
  if (inputs.rootguardOnPath) {
    return { command: inputs.rootguardOnPath, args: ['lsp'], source: 'path' };
  }
  if (interpreter.length > 0) {
    return line(runModule(interpreter, SERVER_MODULE, null), 'python-extension');
  }
  return line(runModule([inputs.pythonOnPath || DEFAULT_PYTHON], SERVER_MODULE, null), inputs.pythonOnPath ? 'python-on-path' : 'default');
}

/** Where `<python…> launch.py lsp_bridge` names the bundle's launcher: its index, else -1. */
function launcherIndex(all: readonly string[]): number {
  const i = all.findIndex((part, index) => basename(part) === LAUNCHER && all[index + 1] === SERVER_MODULE);
  return i > 0 ? i : -1;
}

/** True when the server runs from the extension's bundle. */
export function isBundled(server: CommandLine): boolean {
  return launcherIndex([server.command, ...server.args]) > 0;
}

/** The tray: `<python> -m tray` or `rootguard tray`; null when it is not installed (the bundle has no tray). */
export function trayCommand(server: CommandLine, rootguardOnPath?: string | null): CommandLine | null {
  const all = [server.command, ...server.args];
  if (launcherIndex(all) > 0) {
    return rootguardOnPath ? { command: rootguardOnPath, args: ['tray'] } : null;
  }
  const m = all.indexOf('-m');
  if (m > 0 && all[m + 1] === SERVER_MODULE) {
    return { command: server.command, args: [...all.slice(1, m), '-m', TRAY_MODULE] };
  }
  if (isRootguardScript(server.command)) {
    return { command: server.command, args: ['tray'] };
  }
  return { command: rootguardOnPath || 'rootguard', args: ['tray'] };
}

/**
 * The guarded MCP server with one `--root` per folder, from the same
 * installation as the language server. With the bundled server, a `rootguard`
 * on PATH (a full install, with the MCP SDK) is preferred; else the bundle runs
 * it with the interpreter's own `mcp` package.
 */
export function mcpCommand(server: CommandLine, folders: readonly string[], rootguardOnPath?: string | null): CommandLine {
  const all = [server.command, ...server.args];
  const roots = folders.flatMap((f) => ['--root', f]);
  const launcher = launcherIndex(all);
  if (launcher > 0) {
    if (rootguardOnPath) {
      return { command: rootguardOnPath, args: ['mcp', ...roots] };
    }
    return { command: server.command, args: [...all.slice(1, launcher + 1), CLI_MODULE, 'mcp', ...roots] };
  }
  const m = all.indexOf('-m');
  if (m > 0 && all[m + 1] === SERVER_MODULE) {
    return { command: server.command, args: [...all.slice(1, m), '-m', CLI_MODULE, 'mcp', ...roots] };
  }
  if (isRootguardScript(server.command)) {
    return { command: server.command, args: ['mcp', ...roots] };
  }
  return { command: rootguardOnPath || 'rootguard', args: ['mcp', ...roots] };
}

/**
 * How this installation runs the `rootguard` command line, for a config file to name:
 * `rootguard` from PATH (absolute), else the server's own Python with the bundle's
 * launcher (`<python> …/launch.py lsp_bridge.cli`) or `-m lsp_bridge.cli`. The caller
 * checks that it is absolute and exists before writing it anywhere (`confine.checkedLauncher`).
 */
export function cliLauncher(server: CommandLine, rootguardOnPath?: string | null): string[] {
  const line = mcpCommand(server, [], rootguardOnPath);
  const all = [line.command, ...line.args];
  return all.slice(0, all.lastIndexOf('mcp'));
}

/** `3.12` from what `python -c 'import sys; print(...)'` printed; null when unreadable. */
export function parsePythonVersion(output: string): [number, number] | null {
  const match = /^\s*(\d+)\.(\d+)\b/.exec(output);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/** True for a version the server runs on (3.11 or newer). */
export function isSupportedPython(version: readonly [number, number] | null): boolean {
  if (!version) {
    return false;
  }
  return version[0] > MINIMUM_PYTHON[0] || (version[0] === MINIMUM_PYTHON[0] && version[1] >= MINIMUM_PYTHON[1]);
}

/** The interpreter names looked for on PATH: `python3` first, the versioned names for when it is older. */
export function pythonNames(platform: string): string[] {
  const versioned = ['python3.14', 'python3.13', 'python3.12', 'python3.11'];
  return platform === 'win32' ? ['python', 'python3', ...versioned] : ['python3', ...versioned, 'python'];
}

/** The one notification shown when no interpreter can run the bundled server. */
export function missingPythonMessage(platform: string): string {
  const how = platform === 'darwin'
    ? 'e.g. `brew install python@3.12` or python.org'
    : platform === 'win32'
      ? 'e.g. `winget install Python.Python.3.12` or python.org'
      : 'e.g. `sudo apt install python3` (Debian 12, Ubuntu 24.04) or `sudo dnf install python3`';
  const [major, minor] = MINIMUM_PYTHON;
  return `Root Guard needs Python ${major}.${minor} or newer to run its language server (the extension carries the server itself) `
    + `and found none: neither the Python extension's interpreter nor python3 on PATH. Install Python ${major}.${minor}+ (${how}), `
    + 'or set rootguard.python, then restart the server.';
}

function basename(file: string): string {
  return file.split(/[\\/]/).pop() ?? '';
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
