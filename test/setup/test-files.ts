import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** A relative import or re-export: `from './x.ts'`, `import './x.ts'`, `import('./x.ts')`. */
const RELATIVE_IMPORT = /(?:from\s+|import\s*\(?\s*)'(\.{1,2}\/[^']+\.ts)'/g;
/** vitest's `inject(`: the only way a test is handed this run's database (test/setup/provide.ts). */
const ASKS_FOR_DATABASE = /\binject\(/;

/**
 * The suite's test files under `root`, split by whether they need a database: a file does when it,
 * or a module of the suite it imports (test/helpers.ts, test/e2e/serve.ts...), calls vitest's
 * `inject` for the database's URL or kind. The others run once rather than once per PostgreSQL
 * (docs/development.md#the-tests). Paths relative to the working directory, as vitest's globs are.
 */
export function testFilesByDatabase(root: string, leaveOut: readonly string[]): { withDatabase: string[]; without: string[] } {
  const asksForDatabase = (file: string, seen: Set<string>): boolean => {
    if (seen.has(file)) return false;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    const imported = [...source.matchAll(RELATIVE_IMPORT)].map((match) => resolve(dirname(file), match[1]!));
    return ASKS_FOR_DATABASE.test(source) || imported.some((module) => isInSuite(root, module) && asksForDatabase(module, seen));
  };
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.test.ts') && !path.split('/').includes('node_modules'))
    .map((path) => join(root, path))
    .filter((path) => !leaveOut.includes(path))
    .sort();
  const withDatabase = files.filter((file) => asksForDatabase(resolve(file), new Set()));
  return { withDatabase, without: files.filter((file) => !withDatabase.includes(file)) };
}

const isInSuite = (root: string, module: string) => !relative(resolve(root), module).startsWith('..');
