// Builds bundled/libs: the Root Guard language server (../lsp_bridge) and its
// pure-Python dependencies (bundled/requirements.txt), so that installing the
// .vsix is the whole install (the layout of Microsoft's
// vscode-python-tools-extension-template). Runs at package time (vscode:prepublish).
//
// pip installs the pinned wheels with --no-deps --only-binary :all:
// --implementation py --abi none: only wheels without compiled code qualify.
// The dependencies are reinstalled only when requirements.txt changes;
// lsp_bridge is copied afresh every time.
//
// Environment: ROOTGUARD_BUNDLE_PYTHON, a Python with pip (default: the
// repository's .venv, else python3).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const extension = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repository = resolve(extension, '..');
const requirements = join(extension, 'bundled', 'requirements.txt');
const libs = join(extension, 'bundled', 'libs');
const stamp = join(libs, '.requirements.sha256');
const venvPython = join(repository, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const python = process.env.ROOTGUARD_BUNDLE_PYTHON || (existsSync(venvPython) ? venvPython : 'python3');

const digest = createHash('sha256').update(readFileSync(requirements)).digest('hex');
const current = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '';
if (current !== digest) {
  rmSync(libs, { recursive: true, force: true });
  mkdirSync(libs, { recursive: true });
  const args = [
    '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-compile',
    '--target', libs, '--no-deps', '--only-binary', ':all:', '--implementation', 'py', '--abi', 'none',
    '--python-version', '3.11', '--platform', 'any', '--platform', 'manylinux2014_x86_64',
    '--requirement', requirements,
  ];
  console.log(`bundle-python: ${python} ${args.join(' ')}`);
  const done = spawnSync(python, args, { stdio: 'inherit' });
  if (done.status !== 0) {
    console.error(`bundle-python: pip failed (${done.error?.message ?? `exit ${done.status}`})`);
    process.exit(1);
  }
  for (const extra of ['bin', '__pycache__']) {
    rmSync(join(libs, extra), { recursive: true, force: true }); // console scripts point at the build machine's Python
  }
  writeFileSync(stamp, `${digest}\n`);
}

const source = join(repository, 'lsp_bridge');
const target = join(libs, 'lsp_bridge');
rmSync(target, { recursive: true, force: true });
cpSync(source, target, { recursive: true, filter: (path) => !/(__pycache__|\.pyc$)/.test(path) });
console.log(`bundle-python: ${target} (from ${source})`);
