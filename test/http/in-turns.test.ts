import { describe, expect, it } from 'vitest';
import { mapInTurns } from '../../src/http/in-turns.ts';

describe('mapInTurns', () => {
  it('maps every item in order, part by part, and lets other work run between the parts', async () => {
    const items = Array.from({ length: 1_000 }, (_, i) => i);
    const parts: number[] = [];
    const othersRanAfter: number[] = [];
    let mappedSoFar = 0;
    // Work queued as the mapping gives way is: each turn of it records how far the mapping had come.
    let done = false;
    const others = () => {
      othersRanAfter.push(mappedSoFar);
      if (!done) setImmediate(others);
    };
    setImmediate(others);
    let mapped: string[];
    try {
      mapped = await mapInTurns(items, (part) => {
        parts.push(part.length);
        mappedSoFar += part.length;
        return part.map((i) => `#${i}`);
      });
    } finally {
      done = true;
    }
    expect(mapped).toEqual(items.map((i) => `#${i}`));
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.reduce((a, b) => a + b)).toBe(1_000);
    expect(othersRanAfter.some((n) => n > 0 && n < 1_000)).toBe(true);
    expect(await mapInTurns([], () => [1])).toEqual([]);
  });
});
