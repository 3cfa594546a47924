/** Where the user configuration file lives (platformdirs' user_config_dir("rootguard")). Pure. */
import * as path from 'path';

export const CONFIG_ENV = 'ROOTGUARD_CONFIG';

export function userConfigFile(env: NodeJS.ProcessEnv, platform: string): string | undefined {
  const override = env[CONFIG_ENV];
  if (override) {
    return override;
  }
  const home = env.HOME ?? env.USERPROFILE;
  if (platform === 'win32') {
    const local = env.LOCALAPPDATA ?? (home ? path.win32.join(home, 'AppData', 'Local') : undefined);
    return local ? path.win32.join(local, 'rootguard', 'rootguard', 'config.toml') : undefined;
  }
  if (!home) {
    return undefined;
  }
  if (platform === 'darwin') {
    return path.posix.join(home, 'Library', 'Application Support', 'rootguard', 'config.toml');
  }
  const xdg = env.XDG_CONFIG_HOME && path.posix.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.posix.join(home, '.config');
  return path.posix.join(xdg, 'rootguard', 'config.toml');
}
