import { describe, expect, it } from 'vitest';
import { WorkMeter } from '../../src/engine/work-meter.ts';
import { readCopiedGrants } from '../../src/store/grant-copy.ts';

/** The grants read from `text` cut into chunks of `size` bytes, each as a row of its seven fields. */
async function read(text: string, size: number, stopAfter = Infinity): Promise<unknown[][]> {
  const bytes = Buffer.from(text, 'utf8');
  const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
  const rows: unknown[][] = [];
  await readCopiedGrants(
    (async function* () {
      yield* chunks;
    })(),
    (...row) => rows.push(row) < stopAfter,
  );
  return rows;
}

const LONG = 'a-rather-long-identifier-of-40-characters';
const COPY_TEXT = [
  'user\tann\tviewer\tdocument\td1\t\t',
  `user\t${LONG}\towner\tdocument\td2\t1798761600000\t1.8e+12`,
  'user\tback\\\\slash\\ttab\tviewer\tdocument\tcafé\t\t1700000000000',
  `group\tg|1~x=y+z@h.i_j-k\tmember\tuser\t${LONG}x\t\t`,
  '',
].join('\n');
const ROWS = [
  ['user', 'ann', 'viewer', 'document', 'd1', null, null],
  ['user', LONG, 'owner', 'document', 'd2', 1798761600000, 1.8e12],
  ['user', 'back\\slash\ttab', 'viewer', 'document', 'café', null, 1700000000000],
  ['group', 'g|1~x=y+z@h.i_j-k', 'member', 'user', `${LONG}x`, null, null],
];

describe('readCopiedGrants', () => {
  it('reads every row, however the stream is cut, escapes, UTF-8, long ids and open bounds included', async () => {
    for (const size of [1, 2, 3, 7, 16, 50, 1 << 16]) expect(await read(COPY_TEXT, size), `chunks of ${size}`).toEqual(ROWS);
    // Without the escaped and the UTF-8 row, a chunk is read whole as one string.
    const plain = COPY_TEXT.split('\n')
      .filter((_, i) => i !== 2)
      .join('\n');
    expect(await read(plain, 1 << 16)).toEqual([ROWS[0], ROWS[1], ROWS[3]]);
  });

  it('stops when told to', async () => {
    expect(await read(COPY_TEXT, 16, 2)).toEqual(ROWS.slice(0, 2));
  });

  it('refuses a row cut short or without its columns', async () => {
    await expect(read(COPY_TEXT.slice(0, -3), 16)).rejects.toThrow(/inside a row/);
    await expect(read('user\tann\tviewer\tdocument\td1\t\n', 16)).rejects.toThrow(/columns/);
  });

  it('gives way between chunks at the checkpoints of its slice, however many are buffered already', async () => {
    const chunks = Array.from({ length: 20 }, () => Buffer.from(COPY_TEXT, 'utf8'));
    const rowsWhenOthersRan: number[] = [];
    let rows = 0;
    const others = setInterval(() => rowsWhenOthersRan.push(rows), 0);
    try {
      await readCopiedGrants(
        (async function* () {
          yield* chunks; // all buffered: each next() settles at once
        })(),
        () => ++rows > 0,
        WorkMeter.unmetered(0),
      );
    } finally {
      clearInterval(others);
    }
    expect(rows).toBe(80);
    // Other work ran while the rows were read, not only before or after.
    expect(rowsWhenOthersRan.some((n) => n > 0 && n < 80)).toBe(true);
  });

  it('gives way inside a chunk of thousands of rows, as well as between chunks', async () => {
    const chunk = Buffer.from(Array.from({ length: 2_000 }, (_, i) => `user\tu${i}\tviewer\tdocument\td${i}\t\t1798761600000\n`).join(''), 'utf8');
    const rowsWhenOthersRan: number[] = [];
    let rows = 0;
    // Work queued as the load gives way is: each turn of it records how far the load had come.
    let done = false;
    const others = () => {
      rowsWhenOthersRan.push(rows);
      if (!done) setImmediate(others);
    };
    setImmediate(others);
    try {
      await readCopiedGrants(
        (async function* () {
          yield chunk;
        })(),
        () => ++rows > 0,
        WorkMeter.unmetered(0),
      );
    } finally {
      done = true;
    }
    expect(rows).toBe(2_000);
    expect(rowsWhenOthersRan.filter((n) => n > 0 && n < 2_000).length).toBeGreaterThan(1);
  });
});
