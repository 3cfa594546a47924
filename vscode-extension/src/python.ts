/**
 * The interpreter selected in the Python extension (ms-python.python), when it
 * is installed. Never a dependency: everything here is looked up at run time.
 */
import * as vscode from 'vscode';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/* eslint-disable @typescript-eslint/no-explicit-any */
async function pythonApi(): Promise<any | undefined> {
  const extension = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  return extension.isActive ? extension.exports : await extension.activate();
}

/** The selected interpreter as a command line (`[python]`), or undefined. */
export async function selectedInterpreter(resource?: vscode.Uri): Promise<string[] | undefined> {
  try {
    const api = await pythonApi();
    const environments = api?.environments;
    if (environments?.getActiveEnvironmentPath) {
      const active = environments.getActiveEnvironmentPath(resource);
      const resolved = environments.resolveEnvironment ? await environments.resolveEnvironment(active) : undefined;
      const executable: string | undefined = resolved?.executable?.uri?.fsPath ?? active?.path;
      if (executable) {
        return [executable];
      }
    }
    const details = api?.settings?.getExecutionDetails?.(resource);
    if (Array.isArray(details?.execCommand) && details.execCommand.length > 0) {
      return details.execCommand as string[];
    }
  } catch {
    // A broken or still-loading Python extension is the same as none.
  }
  return undefined;
}

/** Calls `listener` when the selected interpreter changes. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  try {
    const api = await pythonApi();
    const event = api?.environments?.onDidChangeActiveEnvironmentPath ?? api?.settings?.onDidChangeExecutionDetails;
    return typeof event === 'function' ? event(listener) : undefined;
  } catch {
    return undefined;
  }
}
