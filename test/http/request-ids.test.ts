import { describe, expect, it } from 'vitest';
import { newRequestId } from '../../src/http/request-ids.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newRequestId', () => {
  it('makes version 4 UUIDs, a new one each time, past a batch of random bytes', () => {
    const ids = Array.from({ length: 1000 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('uses every digit in the random positions', () => {
    const ids = Array.from({ length: 200 }, () => newRequestId());
    const random = (id: string) => id.replace(/-/g, '').slice(0, 12) + id.replace(/-/g, '').slice(13, 16) + id.replace(/-/g, '').slice(17);
    expect(new Set(ids.flatMap((id) => [...random(id)])).size).toBe(16);
    // The variant's digit takes each of its four values.
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(['8', '9', 'a', 'b']));
  });
});
