import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { prepare } from './provide.ts';

const SERVER_URL = process.env.GRANTD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of this run's own on the machine's PostgreSQL, dropped afterwards. */
export default async function setup(project: TestProject) {
  const name = `grantd_test_${Date.now()}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect().catch((error: Error) => {
    throw new Error(`the PostgreSQL at ${SERVER_URL} is not reachable (${error.message}); start it or set GRANTD_TEST_PG_URL`);
  });
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  await prepare(url.toString());
  project.provide('databaseUrl', url.toString());
  project.provide('databaseKind', 'postgres');
  return async () => {
    const client = new pg.Client({ connectionString: SERVER_URL });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  };
}
