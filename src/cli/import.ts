import { open } from 'node:fs/promises';
import type { Command } from 'commander';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { z } from 'zod';
import { GrantWriteSchema } from '../../contract/grants.ts';
import { explainName, explainRef } from '../../contract/index.ts';
import { ProblemError, ServiceError, type GrantdClient } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient } from './api.ts';

/** Triples per POST /v1/grants/batch: the most a batch takes (docs/configuration.md#limits). */
const BATCH_SIZE = 1000;
/** Batches in flight: the server commits one while the next ones travel. */
const IN_FLIGHT = 4;
/** A batch of 1000 commits in well under a second; this only bounds a server that stopped answering. */
const BATCH_TIMEOUT_MS = 60_000;
const PROGRESS_EVERY_MS = 5_000;

/** A line: a triple, with optional `not_before` and `expires_at` (docs/model.md#time-bound-grants), as POST /v1/grants takes it. */
type Triple = z.output<typeof GrantWriteSchema>;

interface ImportSummary {
  /** Grants read from the input and accepted by the server. */
  grants: number;
  /** Of those, grants that did not exist before (the rest were already present). */
  written: number;
  seconds: number;
}

/** The input was not what `grantd import` reads, or the server refused part of it; `written` grants were written before it stopped. */
class ImportError extends Error {
  constructor(
    message: string,
    readonly written: number,
  ) {
    super(message);
    this.name = 'ImportError';
  }
}

/** A line of the input that is not a grant. */
class LineError extends Error {}

/** One line of NDJSON as a grant triple, or a LineError naming the line. */
function parseLine(line: string, lineNumber: number): Triple {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new LineError(`line ${lineNumber}: not JSON; each line must be one object {"subject", "relation", "object"[, "not_before", "expires_at"]}`);
  }
  const parsed = GrantWriteSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => {
      // A malformed field is told with what is wrong with it and the rule (only an object's string field fails so).
      const given = issue.code === 'invalid_string' ? String((value as Record<string, unknown>)[issue.path[0]!]) : undefined;
      const explained = given === undefined ? undefined : issue.path[0] === 'relation' ? explainName(given) : explainRef(given);
      const message = explained ?? issue.message;
      return issue.path.length ? `${issue.path.join('.')}: ${message}` : message;
    });
    throw new LineError(`line ${lineNumber}: ${issues.join('; ')}`);
  }
  return parsed.data;
}

/** What became of a batch that did not succeed: a problem answer means nothing of it was written; anything else leaves it unknown. */
function batchFailure(error: unknown, firstLine: number, lastLine: number): string {
  const lines = `lines ${firstLine}-${lastLine}`;
  if (error instanceof ProblemError) return `${lines}: the server refused the batch, so none of them was written (${error.type}: ${error.detail})`;
  const why = error instanceof ServiceError ? `${error.type}: ${error.detail}` : String(error);
  return `${lines}: no answer from the server, so they may or may not have been written (${why})`;
}

/**
 * Writes the grants of NDJSON lines through POST /v1/grants/batch, 1000 a call, a few calls in
 * flight. A batch is all or nothing, the import is not: on the first bad line or refused batch it
 * stops reading, lets the batches in flight finish and throws an ImportError saying which lines and
 * how many grants were written. Writing a grant that exists changes nothing, so rerunning the whole
 * input after a fix is safe.
 */
async function importGrants(
  client: GrantdClient,
  lines: AsyncIterable<string>,
  onProgress: (accepted: number, written: number) => void,
): Promise<ImportSummary> {
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  /** Why the import stopped, by the first line concerned (a bad line, or the first of a refused batch). */
  const failures: { line: number; message: string }[] = [];
  let [accepted, written] = [0, 0];
  let lastProgress = started;

  const send = (batch: Triple[], firstLine: number, lastLine: number) => {
    const request = client.grants.batch({ writes: batch }, { timeoutMs: BATCH_TIMEOUT_MS }).then(
      (result) => {
        accepted += batch.length;
        written += result.written;
        if (performance.now() - lastProgress >= PROGRESS_EVERY_MS) {
          lastProgress = performance.now();
          onProgress(accepted, written);
        }
      },
      (error: unknown) => {
        failures.push({ line: firstLine, message: batchFailure(error, firstLine, lastLine) });
      },
    );
    const tracked = request.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };

  let batch: Triple[] = [];
  let batchStart = 0;
  let lineNumber = 0;
  try {
    for await (const text of lines) {
      lineNumber++;
      const line = lineNumber === 1 ? text.replace(/^\uFEFF/, '') : text;
      if (line.trim() === '') continue;
      if (batch.length === 0) batchStart = lineNumber;
      batch.push(parseLine(line, lineNumber));
      if (batch.length === BATCH_SIZE) {
        send(batch, batchStart, lineNumber);
        batch = [];
        while (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
      }
      if (failures.length > 0) break;
    }
    if (batch.length > 0 && failures.length === 0) send(batch, batchStart, lineNumber);
  } catch (error) {
    const where = lineNumber === 0 ? 'cannot read it' : `cannot read beyond line ${lineNumber}`;
    const message = error instanceof LineError ? error.message : `${where}: ${(error as Error).message}`;
    failures.push({ line: lineNumber, message });
  }
  await Promise.all(inFlight);
  if (failures.length > 0) {
    failures.sort((a, b) => a.line - b.line);
    throw new ImportError(failures.map((f) => f.message).join('\n'), written);
  }
  return { grants: accepted, written, seconds: (performance.now() - started) / 1000 };
}

/** The lines of a file, or of standard input for `-` or no file; a file that cannot be opened throws here. */
async function linesOf(file: string | undefined): Promise<AsyncIterable<string>> {
  const input: Readable = file === undefined || file === '-' ? process.stdin : (await open(file)).createReadStream();
  return createInterface({ input, crlfDelay: Infinity });
}

/** `grantd import [file]` through `client` (GRANTD_URL and GRANTD_KEY, kept out of argv, which other users of the machine can read). */
async function importCommand(client: GrantdClient, file: string | undefined, json: boolean): Promise<number> {
  if ((file === undefined || file === '-') && process.stdin.isTTY) {
    process.stderr.write('grantd import: give an NDJSON file, or pipe one to standard input\n');
    return 2;
  }
  const source = file === undefined || file === '-' ? 'standard input' : file;
  let lines: AsyncIterable<string>;
  try {
    lines = await linesOf(file);
  } catch (error) {
    process.stderr.write(`grantd import: cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
    return 1;
  }
  try {
    const summary = await importGrants(client, lines, (accepted, written) => {
      process.stderr.write(`grantd import: ${accepted} grants so far, ${written} new\n`);
    });
    process.stdout.write(
      json
        ? `${JSON.stringify({ grants: summary.grants, written: summary.written, seconds: Number(summary.seconds.toFixed(3)) })}\n`
        : `imported ${summary.grants} grants from ${source}: ${summary.written} new, ${summary.grants - summary.written} already present (${summary.seconds.toFixed(1)} s)\n`,
    );
    return 0;
  } catch (error) {
    if (!(error instanceof ImportError)) throw error;
    process.stderr.write(
      `grantd import: stopped reading ${source}:\n${error.message}\n` +
        `${error.written} new grants were written before it stopped; rerunning the whole import is safe (grants already present are left as they are)\n`,
    );
    return 1;
  }
}

export function registerImport(program: Command): void {
  program
    .command('import')
    .description('write the grants of an NDJSON file through the API, 1000 a batch (scope grant:write)')
    .argument('[file]', 'one {"subject","relation","object"} a line; standard input when none or -')
    .option('--json', 'print {"grants", "written", "seconds"}')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd import grants.ndjson     (grantd export writes such a file)\n`)
    .action(async (file: string | undefined, options: { json?: boolean }, command: Command) => {
      process.exitCode = await importCommand(apiClient(command, 'grant:write').client, file, options.json ?? false);
    });
}
