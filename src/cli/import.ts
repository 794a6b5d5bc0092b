import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { TripleSchema } from '../../contract/index.ts';
import { createClient, DEFAULT_BASE_URL, ProblemError, ServiceError, type GrantdClient } from '../client/index.ts';

/** Triples per POST /v1/grants/batch: the most a batch takes (docs/configuration.md#limits). */
const BATCH_SIZE = 1000;
/** Batches in flight: the server commits one while the next ones travel. */
const IN_FLIGHT = 4;
/** A batch of 1000 commits in well under a second; this only bounds a server that stopped answering. */
const BATCH_TIMEOUT_MS = 60_000;
const PROGRESS_EVERY_MS = 5_000;

interface Triple {
  subject: string;
  relation: string;
  object: string;
}

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
    throw new LineError(`line ${lineNumber}: not JSON; each line must be one object {"subject", "relation", "object"}`);
  }
  const parsed = TripleSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => (issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message));
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

/** `grantd import [file]`: GRANTD_URL and GRANTD_KEY (kept out of argv, which other users of the machine can read). */
export async function importCommand(file: string | undefined, json: boolean): Promise<number> {
  const apiKey = process.env.GRANTD_KEY;
  if (!apiKey) {
    process.stderr.write('grantd import: set GRANTD_KEY to an API key with scope grant:write\n');
    return 2;
  }
  // An empty GRANTD_URL is unset, as a shell's `GRANTD_URL= grantd import` means.
  // eslint-disable-next-line @typescript-eslint/prefer-nullish-coalescing
  const baseUrl = process.env.GRANTD_URL || DEFAULT_BASE_URL;
  if (!URL.canParse(baseUrl)) {
    process.stderr.write(`grantd import: GRANTD_URL is not a URL: ${baseUrl}\n`);
    return 2;
  }
  if ((file === undefined || file === '-') && process.stdin.isTTY) {
    process.stderr.write('grantd import: give an NDJSON file, or pipe one to standard input\n');
    return 2;
  }
  const client = createClient({ apiKey, baseUrl });
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
