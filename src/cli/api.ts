import { InvalidArgumentError, type Command } from 'commander';
import { createClient, DEFAULT_BASE_URL, ProblemError, ServiceError, type GrantdClient } from '../client/index.ts';
import type { KeyScope } from '../../contract/index.ts';
import { CliError } from './errors.ts';

/** What every command that talks to the API reads from its environment (kept out of argv, which other users can read). */
export const API_ENVIRONMENT = `
Environment:
  GRANTD_URL   the grantd to talk to (default ${DEFAULT_BASE_URL})
  GRANTD_KEY   an API key of the tenant (Authorization: Bearer), with the scope the command needs
`;

/** The command's name as typed, `grants list`, for its messages. */
export const commandName = (command: Command): string => {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
};

/** GRANTD_URL; an empty one is unset, as a shell's `GRANTD_URL= grantd ...` means. */
const baseUrlOf = (): string => process.env.GRANTD_URL || DEFAULT_BASE_URL;

/** The official client, for GRANTD_URL with GRANTD_KEY; a missing key or a bad URL is a usage error naming the fix. */
export function apiClient(command: Command, scope: KeyScope): { client: GrantdClient; baseUrl: string } {
  const name = commandName(command);
  const apiKey = process.env.GRANTD_KEY;
  if (!apiKey) throw new CliError(`grantd ${name}: set GRANTD_KEY to an API key with scope ${scope}`, 2);
  const baseUrl = baseUrlOf();
  if (!URL.canParse(baseUrl)) throw new CliError(`grantd ${name}: GRANTD_URL is not a URL: ${baseUrl}`, 2);
  return { client: createClient({ apiKey, baseUrl }), baseUrl };
}

/** What to do about each kind of failure a call can meet, beyond what the server's detail says. */
const HINTS: Record<string, string> = {
  unauthenticated:
    'GRANTD_KEY is not a live key of this grantd; create one (grantd keys create, or grantd key create --tenant <name> with DATABASE_URL)',
  'insufficient-scope': 'use a key with that scope (grantd keys create --scopes ...)',
  'network-error': 'is grantd running there? Set GRANTD_URL to where it listens',
  timeout: 'grantd did not answer in time; retry, or check its health at /readyz',
  'rate-limited': 'the key is over its rate limit; retry later',
  'changes-expired': 'the feed no longer keeps the changes after that revision: read it again from its start (without --after)',
  'invalid-revision': 'pass a revision this tenant was given: a change\'s "revision", or a write\'s Grantd-Revision',
};

/** A failed call as the lines the user reads: what went wrong (the problem's type and detail), each item at fault, and what to do. */
export function explainCallError(command: Command, error: ServiceError): CliError {
  const where = error.type === 'network-error' ? ` (${baseUrlOf()})` : '';
  const lines = [`grantd ${commandName(command)}: ${error.type}: ${error.detail}${where}`];
  if (error instanceof ProblemError) {
    // An item the detail already names (a problem about one field says `path: message`) is not told twice.
    for (const { path, message } of error.errors ?? []) if (error.detail !== `${path}: ${message}`) lines.push(`  ${path}: ${message}`);
  }
  const hint = HINTS[error.type];
  if (hint) lines.push(`  ${hint}`);
  return new CliError(lines.join('\n'));
}

/** Writes lines to standard output, waiting while it is full (a slow pipe). */
export async function writeLines(lines: string[]): Promise<void> {
  if (lines.length === 0) return;
  if (!process.stdout.write(`${lines.join('\n')}\n`)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}

/** Writes one JSON document, for `--json`. */
export const printJson = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};

/** Rows as aligned columns under a header, for people; `(none)` for no row. */
export function printTable(header: string[], rows: string[][]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  process.stdout.write(`${[header, ...rows].map(line).join('\n')}\n`);
}

/** A comma-separated option value as a list (`--scopes grant:read,grant:write`). */
export const commaList = (value: string): string[] =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');

/** A positive integer option (`--limit 20`), or commander's usage error. */
export function positiveInteger(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('expected a positive whole number');
  return Number(value);
}
