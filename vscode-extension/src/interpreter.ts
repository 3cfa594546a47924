/**
 * Finds a Python that can run the bundled server: asks each candidate for its
 * version (a short child process, no shell). No `vscode` import.
 */
import { execFile } from 'child_process';
import { findOnPath, isSupportedPython, parsePythonVersion, pythonNames } from './serverCommand';

export type Probe = (command: readonly string[]) => Promise<[number, number] | null>;

const VERSION_SCRIPT = 'import sys; print("%d.%d" % sys.version_info[:2])';

/** The `major.minor` version of a Python command line, or null when it does not run as Python. */
export function pythonVersion(command: readonly string[], timeoutMs = 10_000): Promise<[number, number] | null> {
  return new Promise((resolve) => {
    if (command.length === 0) {
      resolve(null);
      return;
    }
    execFile(command[0], [...command.slice(1), '-c', VERSION_SCRIPT], { timeout: timeoutMs, windowsHide: true }, (error, stdout) => {
      resolve(error ? null : parsePythonVersion(String(stdout)));
    });
  });
}

/** The first Python >= 3.11 on PATH (`python3`, then `python3.14` … `python3.11`, then `python`), or null. */
export async function findPythonOnPath(
  pathVariable: string | undefined,
  platform: string,
  isExecutable: (candidate: string) => boolean,
  pathExt?: string,
  probe: Probe = pythonVersion,
): Promise<string | null> {
  const seen = new Set<string>();
  for (const name of pythonNames(platform)) {
    const found = findOnPath(name, pathVariable, platform, isExecutable, pathExt);
    if (!found || seen.has(found)) {
      continue;
    }
    seen.add(found);
    if (isSupportedPython(await probe([found]))) {
      return found;
    }
  }
  return null;
}
