import { isAscii } from 'node:buffer';
import { WorkMeter, type Slice } from '../engine/work-meter.ts';

/**
 * A load reads a tenant's grants with COPY ... TO STDOUT in text format (pg-copy-streams), which
 * PostgreSQL streams while the load indexes what came, rather than as rows fetched a chunk at a
 * time, each fetch waiting for the previous chunk's indexing (docs/decisions.md, "Grants held in
 * memory"). Rows are parsed from the bytes, field by field, with no object made per row.
 */

/** The columns of grantsCopySql (src/store/load-sql.ts), in order: a grant and its window's bounds in epoch ms (null: open). */
export type CopiedGrant = (
  subjectNs: string,
  subjectId: string,
  relation: string,
  objectNs: string,
  objectId: string,
  notBefore: number | null,
  expiresAt: number | null,
) => boolean;

const NEWLINE = 10;
const COLUMNS = 7;
/**
 * From this length V8 makes a substring a view of the string it was cut from, which would keep a
 * whole chunk's text alive for as long as the id is held: longer ids are copied out of the bytes.
 */
const SLICED_FROM = 13;

/**
 * Calls `take` with each grant the COPY text stream holds, until the stream ends or `take` returns
 * false. Chunks need not end on a row's end: a partial row waits for the rest. A chunk of ASCII
 * without a backslash (every valid id is such: COPY escapes only a backslash and control
 * characters) is read as one latin1 string, whose offsets are its bytes'; any other row is decoded
 * and unescaped by itself.
 */
export async function readCopiedGrants(stream: AsyncIterable<Buffer>, take: CopiedGrant, slice: Slice = WorkMeter.unmetered()): Promise<void> {
  let rest: Buffer | null = null;
  const chunks = stream[Symbol.asyncIterator]();
  try {
    // Indexing a chunk is the tenant's work, awaiting the next is not; and chunks already buffered
    // are indexed under the slice, which gives way between them, rather than one after another.
    for (let next = await slice.outside(chunks.next()); !next.done; next = await slice.outside(chunks.next())) {
      const data: Buffer = rest === null ? next.value : Buffer.concat([rest, next.value]);
      const rows = data.lastIndexOf(NEWLINE) + 1;
      rest = rows < data.length ? data.subarray(rows) : null;
      if (rows > 0 && !(await takeRows(data, rows, take, slice))) return;
      await slice.checkpoint();
    }
  } finally {
    await chunks.return?.();
  }
  if (rest !== null) throw new Error('grant load: the COPY stream ended inside a row');
}

/**
 * Takes the whole rows of data[0, rows); false when `take` asked to stop. A chunk may hold all that
 * was buffered (thousands of rows): it checkpoints every ROWS_PER_CHECKPOINT rows.
 */
async function takeRows(data: Buffer, rows: number, take: CopiedGrant, slice: Slice): Promise<boolean> {
  const plain = isAscii(data.subarray(0, rows)) && data.subarray(0, rows).indexOf('\\') < 0;
  const text = plain ? data.toString('latin1', 0, rows) : '';
  for (let start = 0, taken = 1; start < rows; taken++) {
    const end = plain ? text.indexOf('\n', start) : data.indexOf(NEWLINE, start);
    if (!(plain ? takeRow(data, text, start, end, take) : takeEscapedRow(data.toString('utf8', start, end), take))) return false;
    start = end + 1;
    if (taken % ROWS_PER_CHECKPOINT === 0) await slice.checkpoint();
  }
  return true;
}

/** Rows indexed between two checkpoints of a load's slice: a few hundred microseconds with windows. */
const ROWS_PER_CHECKPOINT = 256;

/** Takes the row text[start, end), text being data read as latin1 and holding no escape. */
function takeRow(data: Buffer, text: string, start: number, end: number, take: CopiedGrant): boolean {
  const tabs = TABS;
  for (let i = 0, from = start; i < COLUMNS - 1; i++) {
    const tab = text.indexOf('\t', from);
    if (tab < 0 || tab >= end) throw new Error('grant load: a COPY row with too few columns');
    tabs[i] = tab;
    from = tab + 1;
  }
  return take(
    field(data, text, start, tabs[0]!),
    field(data, text, tabs[0]! + 1, tabs[1]!),
    field(data, text, tabs[1]! + 1, tabs[2]!),
    field(data, text, tabs[2]! + 1, tabs[3]!),
    field(data, text, tabs[3]! + 1, tabs[4]!),
    bound(text, tabs[4]! + 1, tabs[5]!),
    bound(text, tabs[5]! + 1, end),
  );
}

function field(data: Buffer, text: string, from: number, to: number): string {
  return to - from < SLICED_FROM ? text.slice(from, to) : data.toString('latin1', from, to);
}

function bound(text: string, from: number, to: number): number | null {
  return from === to ? null : Number(text.slice(from, to));
}
/** Where the tabs of the row being read are (a row is read start to end in one go). */
const TABS = new Int32Array(COLUMNS - 1);

/** The COPY text escapes PostgreSQL writes (it writes no octal or hex ones). */
const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

function takeEscapedRow(row: string, take: CopiedGrant): boolean {
  const fields = row.split('\t').map((field) => field.replace(/\\(.)/g, (_, c: string) => ESCAPES[c] ?? c));
  if (fields.length !== COLUMNS) throw new Error('grant load: a COPY row with the wrong number of columns');
  const [subjectNs, subjectId, relation, objectNs, objectId, notBefore, expiresAt] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return take(subjectNs, subjectId, relation, objectNs, objectId, bound(notBefore, 0, notBefore.length), bound(expiresAt, 0, expiresAt.length));
}
