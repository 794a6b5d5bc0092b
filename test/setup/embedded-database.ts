import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbedded } from '../../src/store/embedded.ts';
import { prepare } from './provide.ts';

/** A fresh embedded PostgreSQL in a temporary folder, exactly as `grantd serve` starts one. */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), 'grantd-test-'));
  chmodSync(dir, 0o711); // as root, PostgreSQL runs as user postgres and must get through
  const print = (line: string) => process.stderr.write(`${line}\n`);
  const embedded = await startEmbedded(join(dir, 'data'), { info: print, warn: print });
  await prepare(embedded.url);
  project.provide('databaseUrl', embedded.url);
  project.provide('databaseKind', 'embedded');
  return async () => {
    await embedded.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
