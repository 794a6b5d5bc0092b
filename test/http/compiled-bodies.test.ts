import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contract } from '../../contract/index.ts';
import { withCompiledBody } from '../../src/http/compiled-bodies.ts';

/** The bulk's body schema as the contract gives it (zod alone), and as the server checks it (compiled first). */
const zodOnly = contract.checkBulk.body;
const served = withCompiledBody(contract.checkBulk).body;
/** Likewise the single check's. */
const zodOnlyCheck = contract.check.body;
const servedCheck = withCompiledBody(contract.check).body;

/** Values near what the patterns accept and refuse: case, colons, lengths, refused characters, `*`. */
const refLike = fc.oneof(
  fc.constantFrom('user:alice', 'document:q3', 'agent:a1', 'group:g~1+x=y|z@w', 'x:.', 'a_1:-', 'user:*', 'document:*', 'user:a*'),
  fc.constantFrom('', 'user', 'user:', ':alice', 'User:alice', 'user:ali ce', 'user:é', 'user:a\n', '1user:a', 'user::a', `user:${'a'.repeat(256)}`),
  fc.constantFrom(
    `user:${'a'.repeat(257)}`,
    `${'u'.repeat(63)}:a`,
    `${'u'.repeat(64)}:a`,
    '__proto__',
    'user:a\u0000',
    'user:\u{1F600}',
    'user:a\u212A',
  ),
  fc.string({ maxLength: 12 }),
);
const relationLike = fc.oneof(
  fc.constantFrom('viewer', 'owner', 'a', `v${'x'.repeat(62)}`, `v${'x'.repeat(63)}`, 'Viewer', '', '1v', 'v-x', 'v ', 'v\n', 'constructor'),
  fc.string({ maxLength: 8 }),
);
const notString = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}));

const check = fc.record({
  subject: fc.oneof({ weight: 5, arbitrary: refLike }, { weight: 1, arbitrary: notString }),
  relation: fc.oneof({ weight: 5, arbitrary: relationLike }, { weight: 1, arbitrary: notString }),
  object: fc.oneof({ weight: 5, arbitrary: refLike }, { weight: 1, arbitrary: notString }),
});
/** A check, or one with a key missing or added, or not an object at all. */
const item = fc.oneof(
  { weight: 8, arbitrary: check },
  { weight: 1, arbitrary: check.map(({ subject, relation }) => ({ subject, relation })) },
  {
    weight: 1,
    arbitrary: fc.tuple(check, fc.constantFrom('extra', 'constructor', 'toString', 'Subject', '__proto__')).map(([c, key]) => ({ ...c, [key]: 'x' })),
  },
  { weight: 1, arbitrary: notString },
);
const body = fc.oneof(
  { weight: 8, arbitrary: fc.record({ checks: fc.array(item, { minLength: 0, maxLength: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ checks: fc.array(item, { maxLength: 2 }), extra: fc.constant(1) }) },
  { weight: 1, arbitrary: fc.oneof(notString, fc.constant({ checks: 'x' }), fc.constant({ Checks: [] }), fc.constant({ checks: {} })) },
);

/** What safeParse says: the data it gives, or the issues it names. */
const outcome = (result: { success: true; data: unknown } | { success: false; error: { issues: unknown[] } }) =>
  result.success ? { data: result.data } : { issues: result.error.issues };

describe('a body schema compiled first (withCompiledBody), on the bulk check', () => {
  it('accepts and refuses exactly what zod does, with the same data and the same issues', () => {
    fc.assert(
      fc.property(body, (value) => {
        // Through JSON, as bodies arrive: a "__proto__" key of the text is an own key then.
        const parsed: unknown = JSON.parse(JSON.stringify(value));
        expect(outcome(served.safeParse(parsed))).toEqual(outcome(zodOnly.safeParse(parsed)));
      }),
      { numRuns: 3000 },
    );
  });

  it('counts every key as zod does: an own __proto__ key, keys past the three, 1 to 1000 checks', () => {
    const valid = { subject: 'user:a', relation: 'viewer', object: 'document:d' };
    const bodies: unknown[] = [
      JSON.parse('{"checks":[{"subject":"user:a","relation":"viewer","object":"document:d","__proto__":{"x":1}}]}'),
      JSON.parse('{"checks":[{"subject":"user:a","relation":"viewer","object":"document:d"}],"__proto__":{}}'),
      { checks: Array.from({ length: 1000 }, () => valid) },
      { checks: Array.from({ length: 1001 }, () => valid) },
      { checks: [] },
      { checks: [{ ...valid, object: 'document:*' }] },
    ];
    for (const value of bodies) expect(outcome(served.safeParse(value))).toEqual(outcome(zodOnly.safeParse(value)));
    expect(served.safeParse(bodies[2]).success).toBe(true);
    expect(served.safeParse(bodies[3]).success).toBe(false);
  });

  it('is taken for the route: its path, method, responses and metadata are the contract’s', () => {
    const { body: _served, ...route } = withCompiledBody(contract.checkBulk);
    const { body: _contract, ...contractRoute } = contract.checkBulk;
    expect(route).toEqual(contractRoute);
  });
});

describe('a body schema compiled first (withCompiledBody), on the single check', () => {
  it('accepts and refuses exactly what zod does, with the same data and the same issues', () => {
    fc.assert(
      fc.property(item, (value) => {
        const parsed: unknown = JSON.parse(JSON.stringify(value));
        expect(outcome(servedCheck.safeParse(parsed))).toEqual(outcome(zodOnlyCheck.safeParse(parsed)));
      }),
      { numRuns: 3000 },
    );
  });

  it('counts every key as zod does, and takes a valid check as it is', () => {
    const valid = { subject: 'user:a', relation: 'viewer', object: 'document:d' };
    const bodies: unknown[] = [
      valid,
      JSON.parse('{"subject":"user:a","relation":"viewer","object":"document:d","__proto__":{"x":1}}'),
      { ...valid, subject: 'user:*' },
      { ...valid, object: 'document:*' },
      { checks: [valid] },
      [valid],
      {},
    ];
    for (const value of bodies) expect(outcome(servedCheck.safeParse(value))).toEqual(outcome(zodOnlyCheck.safeParse(value)));
    const accepted = servedCheck.safeParse(valid);
    expect(accepted.success && accepted.data).toBe(valid);
    expect(servedCheck.safeParse(bodies[1]).success).toBe(false);
  });
});
