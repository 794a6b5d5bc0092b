#!/usr/bin/env node
// `npm run build`'s first step: `prisma generate`, skipped when the generated client in
// src/store/prisma/ was made from the same schema by the same Prisma (docs/development.md#building).
// Plain JavaScript so that an up-to-date `npm start` pays for no TypeScript loader.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'src', 'store', 'prisma', '.generated-from');
const require = createRequire(join(root, 'package.json'));

/** What the generated client depends on: the schema, the config that locates it, and both Prisma versions. */
function inputsDigest() {
  const hash = createHash('sha256');
  for (const file of ['prisma/schema.prisma', 'prisma.config.ts']) hash.update(`${file}\0${readFileSync(join(root, file))}\0`);
  for (const pkg of ['prisma/package.json', '@prisma/client/package.json']) hash.update(`${pkg}\0${require(pkg).version}\0`);
  return hash.digest('hex');
}

const digest = inputsDigest();
const generated = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '';
if (generated === digest) {
  process.stdout.write('prisma generate: src/store/prisma is up to date\n');
} else {
  execFileSync(process.execPath, [require.resolve('prisma/build/index.js'), 'generate'], { cwd: root, stdio: 'inherit' });
  writeFileSync(stamp, `${digest}\n`);
}
