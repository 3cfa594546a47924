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
import { answerShowMessageRequest, SHOW_MESSAGE_REQUEST } from './approvals';
import { onInterpreterChange, selectedInterpreter } from './python';
import { describe, findOnPath, Selection, selectServerCommand } from './serverCommand';
import { ServerState, Status } from './types';

export const STATUS_NOTIFICATION = 'rootguard/status';
const SETTINGS_THAT_RESTART = ['rootguard.serverCommand', 'rootguard.python'];
/** A server that dies after running this long gets one automatic restart. */
const STABLE_MS = 3 * 60 * 1000;

/** A LanguageClient whose errors go to the log only: the controller decides what the user sees. */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
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

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (SETTINGS_THAT_RESTART.some((key) => event.affectsConfiguration(key))) {
          this.log.info('Server settings changed: restarting the server.');
          void this.restart();
        }
      }),
    );
  }

  get current(): ServerState {
    return this.state;
  }

  get status(): Status | null {
    return this.state.kind === 'running' ? this.state.status : null;
  }

  /** The command line the server would start with now, from the current settings. */
  async command(): Promise<Selection> {
    return this.selectCommand();
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      this.autoRestarted = false;
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
    this.selection = selection;
    this.log.info(`Starting the server (${selection.source}): ${describe(selection)}`);
    const output = new TailChannel(this.log);
    const client = new QuietLanguageClient('rootguard', 'Root Guard', serverOptions(selection), this.clientOptions(output));
    client.onNotification(STATUS_NOTIFICATION, (status: Status) => this.setState({ kind: 'running', status }));
    client.onRequest(SHOW_MESSAGE_REQUEST, answerShowMessageRequest);
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

  private async selectCommand(): Promise<Selection> {
    const config = vscode.workspace.getConfiguration('rootguard');
    const inputs = {
      serverCommand: config.get<string[]>('serverCommand', []),
      python: config.get<string>('python', ''),
      rootguardOnPath: findOnPath('rootguard', process.env.PATH, process.platform, isExecutableFile, process.env.PATHEXT),
    };
    let selection = selectServerCommand(inputs);
    if (selection.source === 'default') {
      const interpreter = await selectedInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
      selection = selectServerCommand({ ...inputs, pythonExtension: interpreter });
      if (interpreter) {
        await this.watchInterpreter();
      }
    }
    return selection;
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

function isExecutableFile(candidate: string): boolean {
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
