// Generates src/contract.ts from the server's JSON Schema (docs/rootguard-lsp.schema.json),
// itself generated from lsp_bridge/core/status.py. `--check` fails when the file is stale.
//   node scripts/contract.mjs [--check]
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
export const SCHEMA = join(here, '..', '..', 'docs', 'rootguard-lsp.schema.json');
export const TARGET = join(here, '..', 'src', 'contract.ts');

export async function generate() {
  const schema = JSON.parse(readFileSync(SCHEMA, 'utf8'));
  const text = await compile({ ...schema, title: 'RootGuardLsp', type: 'object', properties: {}, additionalProperties: false }, 'RootGuardLsp', {
    bannerComment:
      '/* Generated from docs/rootguard-lsp.schema.json by `npm run contract` (json-schema-to-typescript); do not edit.\n' +
      ' * The schema is generated from lsp_bridge/core/status.py: change the dataclasses there. */',
    unreachableDefinitions: true,
    additionalProperties: false,
    format: true,
    style: { singleQuote: true, printWidth: 120 },
  });
  return text.replace(/\nexport interface RootGuardLsp \{\}\n/, '\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await generate();
  if (process.argv.includes('--check')) {
    if (readFileSync(TARGET, 'utf8') !== text) {
      console.error('src/contract.ts is stale: run `npm run contract`');
      process.exit(1);
    }
  } else {
    writeFileSync(TARGET, text);
    console.log(`wrote ${TARGET}`);
  }
}
