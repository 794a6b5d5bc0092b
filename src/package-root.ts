import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding grantd's package.json, whether running from src/ or from dist/src/. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'prisma', 'migrations'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("cannot find grantd's prisma/migrations folder");
    dir = parent;
  }
  return dir;
}

/** grantd's version, as its package.json gives it. */
export const packageVersion = (): string => (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
