/**
 * Runs the Root Guard language server: picks its command line, starts and
 * restarts the client, relays `rootguard/status`, and turns failures into one
 * clear error instead of a loop of restarts.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { answerShowMessageRequest, MessageActionItem, SHOW_MESSAGE_REQUEST, ShowMessageRequestParams } from './approvals';
import { onInterpreterChange, selectedInterpreter } from './python';
import { findPythonOnPath, pythonVersion } from './interpreter';
import { describe, findOnPath, isSupportedPython, missingPythonMessage, Selection, selectServerCommand } from './serverCommand';
import { ServerState, Status } from './types';
import { isWideningMessage, isWideningRequest } from './widening';

export const STATUS_NOTIFICATION = 'rootguard/status';
export const SHOW_MESSAGE_NOTIFICATION = 'window/showMessage';

/** Shows the server's widening warning as the extension's own notification; resolves to the button chosen. */
export type WideningHandler = (message: string) => Promise<string | undefined>;
const SETTINGS_THAT_RESTART = ['rootguard.serverCommand', 'rootguard.python'];
/** A server that dies after running this long gets one automatic restart. */
const STABLE_MS = 3 * 60 * 1000;

/** A LanguageClient whose errors go to the log only: the controller decides what the user sees. */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown): void {
    if (isCleanExit(message)) {
      this.info(message); // a server that stopped when asked: not an error
      return;
    }
    super.error(message, data, false);
  }
}

/** vscode-languageclient's line for a server that exited by itself with status 0. */
export function isCleanExit(message: string): boolean {
  return /^Server process exited with code 0\.?$/.test(message.trim());
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private state: ServerState = { kind: 'starting' };
  private selection: Selection | undefined;
  private startedAt = 0;
  private autoRestarted = false;
  private stopping = false;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly disposables: vscode.Disposable[] = [this.stateEmitter];
  private interpreterWatch: vscode.Disposable | undefined;
  /** Starts and restarts run one after the other, never interleaved. */
  private queue: Promise<void> = Promise.resolve();

  /** Fires on every state change and every status notification. */
  readonly onDidChangeState = this.stateEmitter.event;

  private wideningHandler: WideningHandler | undefined;
  private pythonOnPath: { path: string | undefined; found: Promise<string | null> } | undefined;

  /** `bundle`: the bundled server's launcher (`bundled/tool/launch.py`), when the extension carries one. */
  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly bundle: string | null = null,
  ) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (SETTINGS_THAT_RESTART.some((key) => event.affectsConfiguration(key))) {
          this.log.info('Server settings changed: restarting the server.');
          void this.restart();
        }
      }),
    );
  }

  /** Routes the server's widening warnings (`window/showMessage` and `window/showMessageRequest`) to `handler`. */
  onWideningWarning(handler: WideningHandler): void {
    this.wideningHandler = handler;
  }

  get current(): ServerState {
    return this.state;
  }

  get status(): Status | null {
    return this.state.kind === 'running' ? this.state.status : null;
  }

  /** The command line the server would start with now, from the current settings. */
  async command(): Promise<Selection> {
    const selection = await this.selectCommand();
    if (!selection) {
      throw new Error(missingPythonMessage(process.platform));
    }
    return selection;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      this.autoRestarted = false;
      this.pythonOnPath = undefined; // Python may have been installed meanwhile
      await this.stop();
      await this.doStart();
    });
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const next = this.queue.then(task, task);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async doStart(): Promise<void> {
    this.setState({ kind: 'starting' });
    const selection = await this.selectCommand();
    if (!selection) {
      this.selection = undefined;
      this.missingPython();
      return;
    }
    this.selection = selection;
    this.log.info(`Starting the server (${selection.source}): ${describe(selection)}`);
    const output = new TailChannel(this.log);
    const client = new QuietLanguageClient('rootguard', 'Root Guard', serverOptions(selection), this.clientOptions(output));
    client.onNotification(STATUS_NOTIFICATION, (status: Status) => this.setState({ kind: 'running', status }));
    client.onRequest(SHOW_MESSAGE_REQUEST, (params: ShowMessageRequestParams) => this.showMessageRequest(params));
    client.onNotification(SHOW_MESSAGE_NOTIFICATION, (params: { type: number; message: string }) => this.showMessage(params));
    this.client = client;
    let failure: unknown;
    try {
      await client.start();
    } catch (error) {
      failure = error;
    }
    if (failure === undefined && client.state === State.Running) {
      this.startedAt = Date.now();
      if (this.state.kind === 'starting') {
        this.setState({ kind: 'running', status: null });
      }
      this.log.info('Server running.');
      return;
    }
    this.client = undefined;
    const stderr = output.lastLine();
    const why = stderr ? `it said "${stderr}"` : errorText(failure ?? 'it exited during startup');
    this.fail(`could not start the server \`${describe(selection)}\`: ${why}`);
    await client.dispose(1000).catch(() => undefined);
  }

  private async showMessageRequest(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
    const actions = params.actions ?? [];
    if (this.wideningHandler && isWideningRequest(actions)) {
      const choice = await this.wideningHandler(params.message);
      return actions.find((a) => a.title === choice) ?? null;
    }
    return answerShowMessageRequest(params);
  }

  /** As vscode-languageclient shows it, except the widening warning, which the extension shows its own way. */
  private showMessage(params: { type: number; message: string }): void {
    if (this.wideningHandler && isWideningMessage(params.message)) {
      void this.wideningHandler(params.message);
      return;
    }
    const show = params.type === 1
      ? vscode.window.showErrorMessage
      : params.type === 2
        ? vscode.window.showWarningMessage
        : vscode.window.showInformationMessage;
    void show(params.message);
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) {
      return;
    }
    this.stopping = true;
    try {
      await client.stop(2000);
    } catch (error) {
      this.log.warn(`Stopping the server: ${errorText(error)}`);
    } finally {
      this.stopping = false;
    }
  }

  /** Sends a request; fails with a readable error when the server is not running. */
  async request<R>(method: string, params: unknown): Promise<R> {
    if (!this.client || this.state.kind !== 'running') {
      throw new Error('the Root Guard server is not running');
    }
    return this.client.sendRequest<R>(method, params);
  }

  dispose(): void {
    void this.stop();
    this.interpreterWatch?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }

  private async selectCommand(): Promise<Selection | null> {
    const config = vscode.workspace.getConfiguration('rootguard');
    const inputs = {
      serverCommand: config.get<string[]>('serverCommand', []),
      python: config.get<string>('python', ''),
      rootguardOnPath: findOnPath('rootguard', process.env.PATH, process.platform, isExecutableFile, process.env.PATHEXT),
      bundle: this.bundle,
    };
    const first = selectServerCommand(inputs);
    if (first && ['setting', 'python-setting', 'path'].includes(first.source)) {
      return first; // chosen without an interpreter to look for
    }
    const interpreter = await selectedInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
    let usable: string[] | null = null;
    if (interpreter) {
      await this.watchInterpreter();
      const version = await pythonVersion(interpreter);
      if (isSupportedPython(version)) {
        usable = interpreter;
      } else {
        this.log.warn(`The Python extension's interpreter (${describe({ command: interpreter[0], args: interpreter.slice(1) })}) is `
          + `${version ? `Python ${version.join('.')}` : 'not runnable'}; Root Guard needs 3.11 or newer.`);
      }
    }
    const pythonOnPath = usable ? null : await this.findPythonOnPath();
    return selectServerCommand({ ...inputs, pythonExtension: usable, pythonOnPath });
  }

  /** A python3 >= 3.11 on PATH, looked for once per PATH value. */
  private findPythonOnPath(): Promise<string | null> {
    const current = process.env.PATH;
    if (!this.pythonOnPath || this.pythonOnPath.path !== current) {
      this.pythonOnPath = { path: current, found: findPythonOnPath(current, process.platform, isExecutableFile, process.env.PATHEXT) };
    }
    return this.pythonOnPath.found;
  }

  /** No interpreter for the bundled server: one notification that says what to install. */
  private missingPython(): void {
    const message = missingPythonMessage(process.platform);
    this.log.error(message);
    this.setState({ kind: 'down', error: 'no Python 3.11 or newer to run the server' });
    void vscode.window.showErrorMessage(message, 'Download Python', 'Restart Server').then((choice) => {
      if (choice === 'Download Python') {
        void vscode.env.openExternal(vscode.Uri.parse('https://www.python.org/downloads/'));
      } else if (choice === 'Restart Server') {
        this.pythonOnPath = undefined;
        void this.restart();
      }
    });
  }

  private async watchInterpreter(): Promise<void> {
    if (this.interpreterWatch) {
      return;
    }
    this.interpreterWatch = await onInterpreterChange(() => {
      if (this.selection?.source === 'python-extension') {
        this.log.info('The Python interpreter changed: restarting the server.');
        void this.restart();
      }
    });
  }

  private clientOptions(output: vscode.OutputChannel): LanguageClientOptions {
    return {
      documentSelector: [
        { scheme: 'file', pattern: '**/.rootguard.toml' },
        { scheme: 'file', pattern: '**/rootguard/config.toml' },
      ],
      outputChannel: output,
      // The extension shows the widening report in its own webview (with Acknowledge in it):
      // the server then opens no text document of it (one report, one tab).
      initializationOptions: { reportView: true },
      initializationFailedHandler: () => false,
      errorHandler: {
        error: (_error, _message, count): ErrorHandlerResult => ({
          action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: (): CloseHandlerResult => this.closed(),
      },
    };
  }

  /** The connection closed unexpectedly: restart once if it had been stable, else stay down. */
  private closed(): CloseHandlerResult {
    if (this.stopping || this.state.kind === 'starting') {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    const stable = Date.now() - this.startedAt >= STABLE_MS;
    if (stable && !this.autoRestarted) {
      this.autoRestarted = true;
      this.startedAt = Date.now();
      this.log.warn('The server stopped unexpectedly; restarting it once.');
      return { action: CloseAction.Restart, handled: true };
    }
    this.client = undefined;
    this.fail('the server stopped unexpectedly');
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /** One error, with buttons to open the log or restart; no automatic retry. */
  private fail(reason: string): void {
    this.log.error(`Root Guard ${reason}`);
    this.setState({ kind: 'down', error: reason });
    void vscode.window
      .showErrorMessage(`Root Guard: ${reason}. Check the setting rootguard.serverCommand, then restart the server.`, 'Open Log', 'Restart Server')
      .then((choice) => {
        if (choice === 'Open Log') {
          this.log.show(true);
        } else if (choice === 'Restart Server') {
          void this.restart();
        }
      });
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.stateEmitter.fire(state);
  }
}

/**
 * The log channel as the language client sees it, remembering the last line
 * the server wrote to stderr so a failed start can say why.
 */
class TailChannel implements vscode.OutputChannel {
  private tail = '';
  constructor(private readonly log: vscode.LogOutputChannel) {}
  get name(): string {
    return this.log.name;
  }
  append(text: string): void {
    this.tail = (this.tail + text).slice(-2000);
    this.log.append(text);
  }
  appendLine(text: string): void {
    this.log.appendLine(text);
  }
  replace(text: string): void {
    this.log.replace(text);
  }
  clear(): void {
    this.log.clear();
  }
  show(preserveFocus?: boolean): void;
  show(column?: vscode.ViewColumn, preserveFocus?: boolean): void;
  show(arg?: boolean | vscode.ViewColumn, preserveFocus?: boolean): void {
    this.log.show(typeof arg === 'boolean' ? arg : preserveFocus);
  }
  hide(): void {
    this.log.hide();
  }
  dispose(): void {
    // the log outlives each client
  }
  /** The last non-empty line written to stderr, shortened. */
  lastLine(): string {
    const lines = this.tail.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
    const last = lines[lines.length - 1] ?? '';
    return last.length > 200 ? `${last.slice(0, 200)}…` : last;
  }
}

function serverOptions(selection: Selection): ServerOptions {
  return {
    command: selection.command,
    args: selection.args,
    // No `transport`: stdio is the server's only transport, so the command line is
    // run as the user wrote it. (`rootguard lsp` and `python -m lsp_bridge` accept
    // `--stdio` too, but a custom rootguard.serverCommand wrapper may not.)
    options: { env: { ...process.env, PYTHONUNBUFFERED: '1' } },
  };
}

/** True for an existing executable file (for PATH look-ups). */
export function isExecutableFile(candidate: string): boolean {
  try {
    fs.accessSync(candidate, fs.constants.X_OK);
    return fs.statSync(candidate).isFile();
  } catch {
    return false;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
