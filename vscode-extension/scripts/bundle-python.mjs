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
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  // PyYAML publishes no pure wheel, but its package falls back to pure Python by itself when its
  // C extension does not load (yaml.__with_libyaml__ is then False): its CPython 3.11 wheel is
  // installed and the extension removed, so the bundle stays pure Python for every version.
  const lines = readFileSync(requirements, 'utf8').split('\n');
  const fallback = lines.filter((line) => /^pyyaml==/i.test(line.trim()));
  const pure = join(libs, '.requirements-pure.txt');
  writeFileSync(pure, lines.filter((line) => !fallback.includes(line)).join('\n'));
  const install = (tags, requirement) => {
    const args = [
      '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-compile',
      '--target', libs, '--no-deps', '--only-binary', ':all:', ...tags,
      '--python-version', '3.11', '--platform', 'any', '--platform', 'manylinux2014_x86_64', ...requirement,
    ];
    console.log(`bundle-python: ${python} ${args.join(' ')}`);
    const done = spawnSync(python, args, { stdio: 'inherit' });
    if (done.status !== 0) {
      console.error(`bundle-python: pip failed (${done.error?.message ?? `exit ${done.status}`})`);
      process.exit(1);
    }
  };
  install(['--implementation', 'py', '--abi', 'none'], ['--requirement', pure]);
  rmSync(pure, { force: true });
  if (fallback.length) {
    install(['--implementation', 'cp', '--abi', 'cp311', '--platform', 'manylinux_2_17_x86_64'], fallback.map((l) => l.trim()));
    for (const dir of ['yaml', '_yaml']) {
      const where = join(libs, dir);
      for (const entry of existsSync(where) ? readdirSync(where) : []) {
        if (/\.(so|pyd)$/.test(entry)) {
          rmSync(join(where, entry), { force: true });
        }
      }
    }
  }
  for (const extra of ['bin', '__pycache__']) {
    rmSync(join(libs, extra), { recursive: true, force: true }); // console scripts point at the build machine's Python
  }
  writeFileSync(stamp, `${digest}\n`);
}

// The MCP SDK for `rootguard mcp` from the bundle (the extension's MCP server definition):
// the `mcp` pin of ../pyproject.toml with its dependencies, for Linux x86-64. Pure-Python
// packages (and cryptography's abi3 build) go to bundled/mcp/common; the packages compiled
// per CPython version (pydantic-core, rpds-py, cffi) to bundled/mcp/cp3XX, one per version
// the server runs on. launch.py puts them on sys.path when the running Python has its folder.
const MCP_VERSIONS = ['3.11', '3.12', '3.13', '3.14'];
const PER_VERSION = ['pydantic_core', 'rpds_py', 'cffi'];
const mcpDir = join(extension, 'bundled', 'mcp');
const mcpRequirement = /"(mcp[^"]*)"/.exec(/^mcp = \[(.*)\]/m.exec(readFileSync(join(repository, 'pyproject.toml'), 'utf8'))?.[1] ?? '')?.[1];
if (!mcpRequirement) {
  console.error('bundle-python: no mcp extra in pyproject.toml');
  process.exit(1);
}
const mcpStamp = join(mcpDir, '.requirement');
const mcpWanted = `${mcpRequirement} ${MCP_VERSIONS.join(' ')} zip`;
if (!existsSync(mcpStamp) || readFileSync(mcpStamp, 'utf8').trim() !== mcpWanted) {
  rmSync(mcpDir, { recursive: true, force: true });
  const platform = ['--platform', 'manylinux2014_x86_64', '--platform', 'manylinux_2_17_x86_64', '--platform', 'manylinux_2_28_x86_64'];
  const pip = (target, version, args) => {
    const tag = version.replace('.', '');
    const all = ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-compile', '--target', target,
      '--only-binary', ':all:', ...platform, '--python-version', version, '--implementation', 'cp',
      '--abi', `cp${tag}`, '--abi', 'abi3', '--abi', 'none', ...args];
    console.log(`bundle-python: ${python} ${all.join(' ')}`);
    const done = spawnSync(python, all, { stdio: 'inherit' });
    if (done.status !== 0) {
      console.error(`bundle-python: pip failed (${done.error?.message ?? `exit ${done.status}`})`);
      process.exit(1);
    }
  };
  const common = join(mcpDir, 'common');
  pip(common, MCP_VERSIONS[0], [mcpRequirement]);
  const pins = [];
  for (const entry of readdirSync(common)) {
    const match = /^(.+)-([^-]+)\.dist-info$/.exec(entry);
    if (match && PER_VERSION.includes(match[1].toLowerCase())) {
      pins.push(`${match[1]}==${match[2]}`);
    }
  }
  // the compiled packages move out of common: each version gets its own build
  for (const entry of readdirSync(common)) {
    const name = entry.toLowerCase();
    if (name.startsWith('_cffi_backend') || ['pydantic_core', 'rpds', 'cffi'].includes(name)
      || PER_VERSION.some((p) => name.startsWith(`${p}-`))) {
      rmSync(join(common, entry), { recursive: true, force: true });
    }
  }
  for (const version of MCP_VERSIONS) {
    pip(join(mcpDir, `cp${version.replace('.', '')}`), version, ['--no-deps', ...pins]);
  }
  for (const dir of readdirSync(mcpDir)) {
    rmSync(join(mcpDir, dir, 'bin'), { recursive: true, force: true });
  }
  // The pure-Python part goes into one zip (zipimport; directory entries kept for namespace
  // packages such as opentelemetry): a few hundred files less to package and to scan.
  // cryptography (compiled, abi3: one build for every version) stays a directory.
  const abi3 = join(mcpDir, 'abi3');
  mkdirSync(abi3, { recursive: true });
  for (const entry of readdirSync(common).filter((e) => /^cryptography(-.*\.dist-info)?$/.test(e))) {
    cpSync(join(common, entry), join(abi3, entry), { recursive: true });
    rmSync(join(common, entry), { recursive: true, force: true });
  }
  const zipped = spawnSync(python, ['-c', [
    'import os, sys, zipfile',
    'top, out = sys.argv[1], sys.argv[2]',
    'with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:',
    '    for root, dirs, files in sorted(os.walk(top)):',
    '        dirs[:] = sorted(d for d in dirs if d != "__pycache__")',
    '        rel = os.path.relpath(root, top)',
    '        if rel != ".": z.write(root, rel + "/")',
    '        for f in sorted(files): z.write(os.path.join(root, f), os.path.normpath(os.path.join(rel, f)))',
  ].join('\n'), common, join(mcpDir, 'common.zip')], { stdio: 'inherit' });
  if (zipped.status !== 0) {
    console.error('bundle-python: zipping the MCP SDK failed');
    process.exit(1);
  }
  rmSync(common, { recursive: true, force: true });
  writeFileSync(mcpStamp, `${mcpWanted}\n`);
}

// The tray's install (bundled/tool/install_tray.py): the Root Guard wheel, built from this
// checkout, and pip's own wheel (pip runs from it into a venv made --without-pip).
const wheels = join(extension, 'bundled', 'wheels');
rmSync(wheels, { recursive: true, force: true });
mkdirSync(wheels, { recursive: true });
const built = spawnSync(python, ['-m', 'pip', 'wheel', '--quiet', '--disable-pip-version-check', '--no-deps',
  '--wheel-dir', wheels, repository], { stdio: 'inherit' });
if (built.status !== 0) {
  console.error('bundle-python: building the Root Guard wheel failed');
  process.exit(1);
}
const tool = join(extension, 'bundled', 'tool');
const pipPin = readFileSync(join(extension, 'bundled', 'pip-requirement.txt'), 'utf8').split(/\r?\n/).find((l) => /^pip==/.test(l));
if (!readdirSync(tool).some((f) => f === `${pipPin.replace('==', '-')}-py3-none-any.whl`)) {
  for (const old of readdirSync(tool).filter((f) => /^pip-.*\.whl$/.test(f))) {
    rmSync(join(tool, old));
  }
  const got = spawnSync(python, ['-m', 'pip', 'download', '--quiet', '--disable-pip-version-check', '--no-deps', '--only-binary', ':all:',
    '--dest', tool, pipPin], { stdio: 'inherit' });
  if (got.status !== 0) {
    console.error(`bundle-python: downloading ${pipPin} failed`);
    process.exit(1);
  }
}
console.log(`bundle-python: ${readdirSync(wheels).join(', ')} and ${pipPin} for the tray's install`);

// Bytecode a local run of the bundle wrote since it was installed (the stamp kept it): never packaged.
function dropBytecode(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    if (entry.name === '__pycache__') rmSync(path, { recursive: true, force: true });
    else dropBytecode(path);
  }
}
dropBytecode(libs);
dropBytecode(join(extension, 'bundled', 'mcp'));

const source = join(repository, 'lsp_bridge');
const target = join(libs, 'lsp_bridge');
rmSync(target, { recursive: true, force: true });
cpSync(source, target, { recursive: true, filter: (path) => !/(__pycache__|\.pyc$)/.test(path) });
console.log(`bundle-python: ${target} (from ${source})`);
