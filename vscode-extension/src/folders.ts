/**
 * Workspace folder URIs as paths on this machine. No `vscode` import.
 *
 * A folder is a `file:` URI, or — in code-server and other browser-served
 * VS Codes — a `vscode-remote://host:port/path` URI. The latter names a path
 * on this machine when its authority is the extension host's own remote
 * authority or a name of this machine (loopback, the host name); any other
 * authority (another SSH host, a container) is not ours to hand to a local
 * process and is left out.
 */

export interface FolderUri {
  scheme: string;
  authority: string;
  path: string;
  fsPath: string;
}

export const REMOTE_SCHEME = 'vscode-remote';

/** `Host:8080` → `host`, `[::1]:80` → `::1`, `user@host` → `host`. */
export function authorityHost(authority: string): string {
  const withoutUser = authority.slice(authority.lastIndexOf('@') + 1).toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(withoutUser);
  if (bracketed) {
    return bracketed[1];
  }
  return withoutUser.replace(/:\d+$/, '');
}

/** The host names that mean this machine: loopback, `hostname`, and the extension host's remote authority. */
export function localHosts(hostname: string, remoteAuthority?: string | null): Set<string> {
  const hosts = new Set(['localhost', '127.0.0.1', '::1', '0.0.0.0']);
  if (hostname) {
    hosts.add(hostname.toLowerCase());
    hosts.add(hostname.toLowerCase().split('.')[0]);
  }
  if (remoteAuthority && !remoteAuthority.includes('+')) {
    hosts.add(authorityHost(remoteAuthority)); // e.g. code-server's `host:port`; not `ssh-remote+x`
  }
  return hosts;
}

/** The local path of a workspace folder, or null when it is not on this machine. */
export function localFolderPath(uri: FolderUri, hosts: ReadonlySet<string>, remoteAuthority?: string | null): string | null {
  if (uri.scheme === 'file') {
    return uri.fsPath;
  }
  if (uri.scheme !== REMOTE_SCHEME || !uri.path.startsWith('/')) {
    return null;
  }
  const local = (remoteAuthority && uri.authority.toLowerCase() === remoteAuthority.toLowerCase())
    || hosts.has(authorityHost(uri.authority));
  if (!local) {
    return null;
  }
  // `/c:/x` on Windows hosts; a POSIX path elsewhere
  return /^\/[a-zA-Z]:\//.test(uri.path) ? uri.path.slice(1).replace(/\//g, '\\') : uri.path;
}

/** A short, stable tag of a folder list, so a changed list is a new definition version. */
export function foldersTag(folders: readonly string[]): string {
  let hash = 0x811c9dc5;
  for (const char of folders.join('\n')) {
    hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
