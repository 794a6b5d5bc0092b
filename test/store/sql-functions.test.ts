import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { databaseUrl } from '../helpers.ts';

/**
 * prisma/functions holds the body in force of every SQL function the migrations define, one file a
 * function (prisma/functions/README.md). A change to a function's file without a migration, or to
 * a migration without the file, fails here.
 */
const FUNCTIONS = 'prisma/functions';
const MIGRATIONS = 'prisma/migrations';

/** Each `CREATE [OR REPLACE] FUNCTION "name" ... $$ ... $$;`: its name and its text from FUNCTION on. */
const CREATE_FUNCTION = /CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION\s+"(\w+)"[\s\S]*?\$\$([\s\S]*?)\$\$\s*;)/g;

interface Definition {
  name: string;
  /** From FUNCTION to the closing semicolon: the signature, the options and the body. */
  text: string;
  /** Between the dollar quotes, as PostgreSQL keeps it (pg_proc.prosrc). */
  body: string;
}

const definitionsIn = (sql: string): Definition[] =>
  [...sql.matchAll(CREATE_FUNCTION)].map(([, text, name, body]) => ({ name: name!, text: text!, body: body! }));

const normalised = (sql: string) => sql.replace(/\s+/g, ' ').trim();

const files = readdirSync(FUNCTIONS)
  .filter((file) => file.endsWith('.sql'))
  .sort()
  .map((file) => ({ file, sql: readFileSync(join(FUNCTIONS, file), 'utf8') }));

/** The migrations in the order they are applied (src/store/migrate.ts), each with the functions it defines. */
const migrations = readdirSync(MIGRATIONS, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort()
  .map((name) => ({ name, definitions: definitionsIn(readFileSync(join(MIGRATIONS, name, 'migration.sql'), 'utf8')) }));

/** The one definition in a function's file, which must be named as the file and replace what is there. */
function definitionOf(file: string, sql: string): Definition {
  const definitions = definitionsIn(sql);
  expect(
    definitions.map((d) => d.name),
    `${file} defines one function, named as the file`,
  ).toEqual([file.replace(/\.sql$/, '')]);
  expect(sql, `${file} is written CREATE OR REPLACE, as a migration takes it`).toMatch(/CREATE OR REPLACE FUNCTION/);
  return definitions[0]!;
}

describe('prisma/functions', () => {
  it.each(files.map(({ file, sql }) => [file, sql]))('%s is what the last migration defining its function defines', (file, sql) => {
    const { name, text } = definitionOf(file, sql);
    const last = migrations.findLast((m) => m.definitions.some((d) => d.name === name));
    expect(last, `a migration defines ${name}`).toBeDefined();
    const defined = last!.definitions.findLast((d) => d.name === name)!;
    expect(normalised(text), `${file} against migration ${last!.name}`).toBe(normalised(defined.text));
  });

  it('holds every function of the migrated database, each with the body in force', async () => {
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    try {
      // The functions of the schema the migrations ran in, but those an extension brings.
      const { rows } = await client.query<{ name: string; body: string }>(`
        SELECT p.proname AS name, p.prosrc AS body FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
`);
      const inForce = rows.map((r) => ({ name: r.name, body: normalised(r.body) }));
      const held = files.map(({ file, sql }) => definitionOf(file, sql)).map((d) => ({ name: d.name, body: normalised(d.body) }));
      const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : 1);
      expect(inForce.sort(byName)).toEqual(held.sort(byName));
    } finally {
      await client.end();
    }
  });
});
