import * as assert from 'assert';
import { userConfigFile } from '../src/configFile';

describe('user configuration file location', () => {
  it('follows ROOTGUARD_CONFIG first', () => {
    assert.strictEqual(userConfigFile({ ROOTGUARD_CONFIG: '/etc/rg.toml', HOME: '/home/u' }, 'linux'), '/etc/rg.toml');
  });
  it('uses XDG_CONFIG_HOME or ~/.config on Linux', () => {
    assert.strictEqual(userConfigFile({ HOME: '/home/u' }, 'linux'), '/home/u/.config/rootguard/config.toml');
    assert.strictEqual(userConfigFile({ HOME: '/home/u', XDG_CONFIG_HOME: '/x' }, 'linux'), '/x/rootguard/config.toml');
    assert.strictEqual(userConfigFile({ HOME: '/home/u', XDG_CONFIG_HOME: 'rel' }, 'linux'), '/home/u/.config/rootguard/config.toml');
  });
  it('uses Application Support on macOS and LOCALAPPDATA on Windows', () => {
    assert.strictEqual(userConfigFile({ HOME: '/Users/u' }, 'darwin'), '/Users/u/Library/Application Support/rootguard/config.toml');
    assert.strictEqual(userConfigFile({ LOCALAPPDATA: 'C:\\Users\\u\\AppData\\Local' }, 'win32'), 'C:\\Users\\u\\AppData\\Local\\rootguard\\rootguard\\config.toml');
  });
  it('gives up without a home', () => {
    assert.strictEqual(userConfigFile({}, 'linux'), undefined);
  });
});
