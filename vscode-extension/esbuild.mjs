// Bundles src/extension.ts and its dependencies into dist/extension.js.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const context = await esbuild.context({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  outfile: 'dist/extension.js',
  external: ['vscode'],
  // ESM builds first: jsonc-parser's UMD main requires './impl/format' at run time, which a bundle cannot resolve
  mainFields: ['module', 'main'],
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: 'warning',
});
if (watch) {
  await context.watch();
} else {
  await context.rebuild();
  await context.dispose();
}
