/**
 * A small hand-written stand-in for the `vscode` module, resolved in place of
 * the real one by test/setup.ts (the pattern of Microsoft's
 * vscode-common-python-lsp). It records what the extension shows and lets a
 * test script the user's answers through `stub`.
 */
import * as path from 'path';

type Listener<T> = (value: T) => unknown;

export class Disposable {
  constructor(private readonly callback: () => void = () => undefined) {}
  static from(...items: Array<{ dispose(): unknown }>): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.callback();
  }
}

export class EventEmitter<T> {
  private listeners: Array<Listener<T>> = [];
  readonly event = (listener: Listener<T>, thisArg?: unknown, disposables?: Disposable[]): Disposable => {
    const bound = thisArg ? listener.bind(thisArg) : listener;
    this.listeners.push(bound);
    const d = new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== bound)));
    disposables?.push(d);
    return d;
  };
  fire(value: T): void {
    [...this.listeners].forEach((l) => l(value));
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query = '',
    readonly fragment = '',
  ) {}
  static file(fsPath: string): Uri {
    return new Uri('file', '', path.posix.normalize(fsPath.replace(/\\/g, '/')));
  }
  static parse(value: string): Uri {
    const match = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!match) {
      throw new Error(`not a URI: ${value}`);
    }
    return new Uri(match[1], match[2] ?? '', decodeURIComponent(match[3] ?? ''), match[4] ?? '', match[5] ?? '');
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, base.authority, path.posix.join(base.path, ...segments));
  }
  get fsPath(): string {
    return this.path;
  }
  with(change: { scheme?: string; path?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, this.authority, change.path ?? this.path, this.query, this.fragment);
  }
  toString(): string {
    const encoded = this.path.split('/').map(encodeURIComponent).join('/');
    return `${this.scheme}://${this.authority}${encoded}`;
  }
  toJSON(): unknown {
    return { scheme: this.scheme, authority: this.authority, path: this.path };
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  isTrusted = false;
  supportHtml = false;
  constructor(public value = '', public supportThemeIcons = false) {}
  appendMarkdown(value: string): this {
    this.value += value;
    return this;
  }
  appendText(value: string): this {
    this.value += value.replace(/[\\`*_{}[\]()#+\-.!]/g, '\\$&');
    return this;
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}

export class Range {
  constructor(readonly start: Position, readonly end: Position) {}
}

/** Base classes vscode-languageclient extends at load time; never used by Root Guard. */
class Plain {
  constructor(..._args: unknown[]) {}
}
export class CallHierarchyItem extends Plain {}
export class CodeLens extends Plain {}
export class CompletionItem extends Plain {}
export class DocumentLink extends Plain {}
export class InlayHint extends Plain {}
export class SymbolInformation extends Plain {}
export class TypeHierarchyItem extends Plain {}
export class CodeAction extends Plain {}
export class Diagnostic extends Plain {}
export class CancellationError extends Error {}

class Kind {
  constructor(readonly value: string) {}
}
export const CodeActionKind = {
  Empty: new Kind(''),
  QuickFix: new Kind('quickfix'),
  Refactor: new Kind('refactor'),
  RefactorExtract: new Kind('refactor.extract'),
  RefactorInline: new Kind('refactor.inline'),
  RefactorRewrite: new Kind('refactor.rewrite'),
  Source: new Kind('source'),
  SourceOrganizeImports: new Kind('source.organizeImports'),
};

export enum StatusBarAlignment { Left = 1, Right = 2 }
export enum QuickPickItemKind { Separator = -1, Default = 0 }
export enum ViewColumn { Active = -1, Beside = -2, One = 1 }
export enum ConfigurationTarget { Global = 1, Workspace = 2, WorkspaceFolder = 3 }
export enum LogLevel { Off = 0, Trace = 1, Debug = 2, Info = 3, Warning = 4, Error = 5 }
export enum DiagnosticSeverity { Error = 0, Warning = 1, Information = 2, Hint = 3 }
export enum TextDocumentSaveReason { Manual = 1, AfterDelay = 2, FocusOut = 3 }
export enum EndOfLine { LF = 1, CRLF = 2 }
export enum UIKind { Desktop = 1, Web = 2 }
export enum ProgressLocation { SourceControl = 1, Window = 10, Notification = 15 }

export const version = '1.82.0';

// ---------------------------------------------------------------------------
// What the test scripts and inspects.

export interface Shown {
  kind: 'info' | 'warning' | 'error' | 'quickPick';
  message: string;
  items: any[];
  options?: any;
}

export interface FakeStatusBarItem {
  id: string;
  alignment: StatusBarAlignment;
  priority?: number;
  name?: string;
  text: string;
  tooltip: string | MarkdownString | undefined;
  backgroundColor: ThemeColor | undefined;
  command: string | undefined;
  accessibilityInformation?: { label: string; role?: string };
  visible: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export interface FakeLog {
  name: string;
  lines: string[];
  shown: number;
}

export const stub = {
  /** Every message, notification and quick pick shown, in order. */
  shown: [] as Shown[],
  /** Answers a shown message or quick pick; default: dismissed (undefined). */
  answer: (_shown: Shown): any => undefined,
  statusBarItems: [] as FakeStatusBarItem[],
  logs: [] as FakeLog[],
  commands: new Map<string, (...args: any[]) => any>(),
  settings: {} as Record<string, unknown>,
  clipboard: '',
  /** vscode.diff calls: [left, right, title]. */
  diffs: [] as any[][],
  folders: undefined as Array<{ uri: Uri; name: string; index: number }> | undefined,
  activeFile: undefined as Uri | undefined,
  foundFiles: [] as Uri[],
  extensions: new Map<string, any>(),
  webviews: [] as Array<{ title: string; html: string; messages: (m: any) => void }>,
  opened: [] as any[],
  terminals: [] as Array<{ name: string; sent: string[]; shown: boolean }>,
  configurationChanged: new EventEmitter<{ affectsConfiguration(section: string): boolean }>(),
  foldersChanged: new EventEmitter<{ added: any[]; removed: any[] }>(),
  reset(): void {
    stub.diffs = [];
    this.shown = [];
    this.answer = () => undefined;
    this.statusBarItems = [];
    this.logs = [];
    this.commands.clear();
    this.settings = {};
    this.clipboard = '';
    this.folders = undefined;
    this.activeFile = undefined;
    this.foundFiles = [];
    this.extensions.clear();
    this.webviews = [];
    this.opened = [];
    this.terminals = [];
    (exports as any).lm = undefined;
    (exports as any).McpStdioServerDefinition = undefined;
  },
  /** Sets workspace folders by path. */
  setFolders(paths: string[] | undefined): void {
    this.folders = paths?.map((p, index) => ({ uri: Uri.file(p), name: path.basename(p), index }));
  },
  /** Changes settings and fires onDidChangeConfiguration for them. */
  changeSettings(values: Record<string, unknown>): void {
    Object.assign(this.settings, values);
    const keys = Object.keys(values);
    this.configurationChanged.fire({ affectsConfiguration: (section) => keys.some((k) => k === section || k.startsWith(`${section}.`)) });
  },
};

function show(kind: Shown['kind'], message: string, rest: any[]): Promise<any> {
  const options = rest.length > 0 && rest[0] && typeof rest[0] === 'object' && !('title' in rest[0]) ? rest.shift() : undefined;
  const entry: Shown = { kind, message, items: rest, options };
  stub.shown.push(entry);
  return Promise.resolve(stub.answer(entry));
}

function logChannel(name: string): any {
  const log: FakeLog = { name, lines: [], shown: 0 };
  stub.logs.push(log);
  const write = (level: string) => (message: string) => log.lines.push(`[${level}] ${message}`);
  return {
    name,
    logLevel: LogLevel.Info,
    onDidChangeLogLevel: new EventEmitter<LogLevel>().event,
    append: (text: string) => log.lines.push(text),
    appendLine: (text: string) => log.lines.push(text),
    replace: (text: string) => (log.lines = [text]),
    clear: () => (log.lines = []),
    show: () => (log.shown += 1),
    hide: () => undefined,
    dispose: () => undefined,
    trace: write('trace'),
    debug: write('debug'),
    info: write('info'),
    warn: write('warning'),
    error: (message: string | Error) => log.lines.push(`[error] ${message instanceof Error ? message.message : message}`),
  };
}

export const window = {
  get activeTextEditor(): any {
    return stub.activeFile ? { document: { uri: stub.activeFile, fileName: stub.activeFile.fsPath } } : undefined;
  },
  visibleTextEditors: [] as any[],
  onDidChangeActiveTextEditor: new EventEmitter<any>().event,
  onDidChangeVisibleTextEditors: new EventEmitter<any>().event,
  showInformationMessage: (message: string, ...rest: any[]) => show('info', message, rest),
  showWarningMessage: (message: string, ...rest: any[]) => show('warning', message, rest),
  showErrorMessage: (message: string, ...rest: any[]) => show('error', message, rest),
  showQuickPick: async (items: any, options?: any) => {
    const resolved = await items;
    const entry: Shown = { kind: 'quickPick', message: options?.title ?? '', items: resolved, options };
    stub.shown.push(entry);
    return stub.answer(entry);
  },
  createOutputChannel: (name: string, _options?: unknown) => logChannel(name),
  createStatusBarItem: (id: string, alignment: StatusBarAlignment, priority?: number): FakeStatusBarItem => {
    const item: FakeStatusBarItem = {
      id, alignment, priority, text: '', tooltip: undefined, backgroundColor: undefined, command: undefined, visible: false,
      show() { this.visible = true; },
      hide() { this.visible = false; },
      dispose() { this.visible = false; },
    };
    stub.statusBarItems.push(item);
    return item;
  },
  createWebviewPanel: (_type: string, title: string) => {
    const disposed = new EventEmitter<void>();
    const received = new EventEmitter<any>();
    const view = { title, html: '', messages: (m: any) => received.fire(m) };
    stub.webviews.push(view);
    return {
      title,
      webview: {
        cspSource: 'vscode-resource:',
        get html() { return view.html; },
        set html(value: string) { view.html = value; },
        onDidReceiveMessage: received.event,
        postMessage: async () => true,
      },
      reveal: () => undefined,
      onDidDispose: disposed.event,
      dispose: () => disposed.fire(),
    };
  },
  showTextDocument: async (document: any) => {
    stub.opened.push(document);
    return { document };
  },
  createTerminal: (options: { name?: string }) => {
    const terminal = { name: options?.name ?? '', sent: [] as string[], shown: false, show() { this.shown = true; }, sendText(text: string) { this.sent.push(text); }, dispose() {} };
    stub.terminals.push(terminal);
    return terminal;
  },
  withProgress: async (_options: unknown, task: (progress: any, token: any) => Promise<unknown>) =>
    task({ report: () => undefined }, new CancellationTokenSource().token),
};

export const commands = {
  registerCommand: (id: string, callback: (...args: any[]) => any): Disposable => {
    if (stub.commands.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    stub.commands.set(id, callback);
    return new Disposable(() => stub.commands.delete(id));
  },
  executeCommand: async (id: string, ...args: any[]) => {
    const command = stub.commands.get(id);
    if (id === 'vscode.diff') {
      stub.diffs.push(args);
      return undefined;
    }
    if (!command) {
      throw new Error(`command '${id}' not found`);
    }
    return command(...args);
  },
  getCommands: async () => [...stub.commands.keys()],
};

function configuration(section?: string): any {
  const key = (name: string) => (section ? `${section}.${name}` : name);
  return {
    get: (name: string, fallback?: unknown) => (key(name) in stub.settings ? stub.settings[key(name)] : fallback),
    has: (name: string) => key(name) in stub.settings,
    inspect: (name: string) => ({ key: key(name), globalValue: stub.settings[key(name)] }),
    update: async (name: string, value: unknown) => stub.changeSettings({ [key(name)]: value }),
  };
}

export const workspace = {
  get workspaceFolders() {
    return stub.folders;
  },
  get name() {
    return stub.folders ? 'test' : undefined;
  },
  workspaceFile: undefined,
  textDocuments: [] as any[],
  notebookDocuments: [] as any[],
  getConfiguration: configuration,
  onDidChangeConfiguration: stub.configurationChanged.event,
  onDidChangeWorkspaceFolders: stub.foldersChanged.event,
  onDidOpenTextDocument: new EventEmitter<any>().event,
  onDidCloseTextDocument: new EventEmitter<any>().event,
  onDidChangeTextDocument: new EventEmitter<any>().event,
  onDidSaveTextDocument: new EventEmitter<any>().event,
  onWillSaveTextDocument: new EventEmitter<any>().event,
  onDidOpenNotebookDocument: new EventEmitter<any>().event,
  onDidCloseNotebookDocument: new EventEmitter<any>().event,
  onDidChangeNotebookDocument: new EventEmitter<any>().event,
  onDidSaveNotebookDocument: new EventEmitter<any>().event,
  onDidCreateFiles: new EventEmitter<any>().event,
  onDidRenameFiles: new EventEmitter<any>().event,
  onDidDeleteFiles: new EventEmitter<any>().event,
  onWillCreateFiles: new EventEmitter<any>().event,
  onWillRenameFiles: new EventEmitter<any>().event,
  onWillDeleteFiles: new EventEmitter<any>().event,
  getWorkspaceFolder: (uri: Uri) => stub.folders?.find((f) => uri.path === f.uri.path || uri.path.startsWith(`${f.uri.path}/`)),
  asRelativePath: (uri: Uri | string) => (typeof uri === 'string' ? uri : uri.fsPath),
  findFiles: async () => stub.foundFiles,
  openTextDocument: async (options: any) => ({ uri: Uri.parse('untitled:report.md'), getText: () => options?.content ?? '', languageId: options?.language }),
  createFileSystemWatcher: () => ({
    onDidCreate: new EventEmitter<any>().event,
    onDidChange: new EventEmitter<any>().event,
    onDidDelete: new EventEmitter<any>().event,
    dispose: () => undefined,
  }),
};

/** `languages.register*Provider` for the features a server may announce: recorded, never called. */
export const registeredProviders: string[] = [];
const languagesBase = {
  createDiagnosticCollection: (name?: string) => ({
    name: name ?? 'diagnostics',
    set: () => undefined,
    delete: () => undefined,
    clear: () => undefined,
    forEach: () => undefined,
    get: () => undefined,
    has: () => false,
    dispose: () => undefined,
  }),
  match: () => 0,
  getLanguages: async () => [],
};
export const languages: typeof languagesBase & Record<string, any> = new Proxy(languagesBase, {
  get(target: any, name: string) {
    if (name in target) {
      return target[name];
    }
    if (name.startsWith('register')) {
      return () => {
        registeredProviders.push(name);
        return new Disposable();
      };
    }
    return undefined;
  },
});

export const env = {
  appName: 'Visual Studio Code (stand-in)',
  appRoot: '',
  language: 'en',
  machineId: 'test-machine',
  sessionId: 'test-session',
  uiKind: UIKind.Desktop,
  clipboard: {
    readText: async () => stub.clipboard,
    writeText: async (text: string) => {
      stub.clipboard = text;
    },
  },
  openExternal: async () => true,
};

export const extensions = {
  getExtension: (id: string) => stub.extensions.get(id),
  get all() {
    return [...stub.extensions.values()];
  },
  onDidChange: new EventEmitter<void>().event,
};

/** Absent unless a test installs it: the MCP API of VS Code 1.101+. */
export let lm: any;
export let McpStdioServerDefinition: any;
