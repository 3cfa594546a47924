// Copies the repository's icon and status bar screenshot into media/ for packaging.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const extension = join(dirname(fileURLToPath(import.meta.url)), '..');
const repository = join(extension, '..');
const files = [
  [join(repository, 'icons', 'app-128.png'), join(extension, 'media', 'icon.png'), true],
  [join(repository, 'docs', 'screenshots', 'statusbar-warning.png'), join(extension, 'media', 'statusbar-warning.png'), false],
];
mkdirSync(join(extension, 'media'), { recursive: true });
for (const [source, target, required] of files) {
  if (existsSync(source)) {
    copyFileSync(source, target);
  } else if (required) {
    console.error(`missing ${source}`);
    process.exit(1);
  } else {
    console.warn(`note: ${source} not found; the README screenshot will be missing`);
  }
}
