import * as assert from 'assert';
import { authorityHost, foldersTag, localFolderPath, localHosts } from '../src/folders';

const uri = (scheme: string, authority: string, path: string) => ({ scheme, authority, path, fsPath: path });

describe('workspace folders as local paths', () => {
  const hosts = localHosts('devbox.example.com', '127.0.0.1:8080');

  it('file: URIs are paths', () => {
    assert.strictEqual(localFolderPath(uri('file', '', '/home/u/shop'), hosts), '/home/u/shop');
  });

  it("vscode-remote: URIs of this machine (code-server's own authority, loopback, the host name) are paths", () => {
    assert.strictEqual(localFolderPath(uri('vscode-remote', '127.0.0.1:8080', '/home/u/shop'), hosts, '127.0.0.1:8080'), '/home/u/shop');
    assert.strictEqual(localFolderPath(uri('vscode-remote', 'localhost:9999', '/srv/x'), hosts), '/srv/x');
    assert.strictEqual(localFolderPath(uri('vscode-remote', 'DevBox:8443', '/srv/x'), hosts), '/srv/x');
    assert.strictEqual(localFolderPath(uri('vscode-remote', '[::1]:8080', '/srv/x'), hosts), '/srv/x');
    assert.strictEqual(localFolderPath(uri('vscode-remote', 'code.example.org:443', '/srv/x'), localHosts('h', 'code.example.org:443'), 'code.example.org:443'), '/srv/x');
  });

  it('other machines and other schemes are left out', () => {
    assert.strictEqual(localFolderPath(uri('vscode-remote', 'ssh-remote+prod', '/srv/x'), hosts, 'ssh-remote'), null);
    assert.strictEqual(localFolderPath(uri('vscode-remote', 'other-host:8080', '/srv/x'), hosts), null);
    assert.strictEqual(localFolderPath(uri('vscode-vfs', 'github', '/o/r'), hosts), null);
    assert.ok(!localHosts('h', 'ssh-remote+prod').has('prod'));
  });

  it('parses authorities and tags folder lists', () => {
    assert.strictEqual(authorityHost('user@Host:22'), 'host');
    assert.strictEqual(authorityHost('[::1]:80'), '::1');
    assert.strictEqual(foldersTag(['/a', '/b']), foldersTag(['/a', '/b']));
    assert.notStrictEqual(foldersTag(['/a']), foldersTag(['/a', '/b']));
  });
});
