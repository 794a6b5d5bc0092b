import { setImmediate as giveWay } from 'node:timers/promises';

/**
 * A route's own work over a page it read (the feed's 1,000 changes, each sealed and formatted) is
 * done PART_LENGTH items at a time, each part in a turn of the event loop: a whole page in one turn
 * held the node for tens of milliseconds, every tenant's requests waiting behind it
 * (docs/decisions.md#one-meter-for-all-work-in-memory: the same bound the work meter keeps in memory).
 */
export async function mapInTurns<T, U>(items: readonly T[], mapPart: (part: readonly T[]) => U[]): Promise<U[]> {
  const mapped: U[] = [];
  for (let from = 0; from < items.length; from += PART_LENGTH) {
    if (from > 0) await giveWay();
    mapped.push(...mapPart(items.slice(from, from + PART_LENGTH)));
  }
  return mapped;
}

/** Items mapped in one turn: a few milliseconds of the feed's sealing and formatting. */
const PART_LENGTH = 250;
