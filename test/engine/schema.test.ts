import { beforeEach, describe, expect, it } from 'vitest';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { masksAdmit, scopeCovers } from '../../src/engine/scope.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { DomainError } from '../../src/errors.ts';
import { DOCUMENT_RELATIONS } from './fixtures.ts';

const problemType = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof DomainError ? error.type : 'not a DomainError';
  }
  return 'no error';
};

describe('compiled schema', () => {
  // Compiled in each test, not as the file loads: `npm run mutate` credits a test with the code it runs.
  let schema: CompiledSchema;
  beforeEach(() => {
    schema = new CompiledSchema([
      { name: 'document', relations: DOCUMENT_RELATIONS },
      { name: 'user', relations: null },
    ]);
  });

  it('closes includes on the same object, each relation implying itself', () => {
    const implied = (rel: string) =>
      schema.closure
        .filter((r) => r.rel === rel)
        .map((r) => r.implied)
        .sort();
    expect(implied('viewer')).toEqual(['editor', 'owner', 'viewer']);
    expect(implied('editor')).toEqual(['editor', 'owner']);
    expect(implied('owner')).toEqual(['owner']);
  });

  it('lists arrows per relation and nothing for open namespaces', () => {
    expect(schema.arrows).toEqual([{ ns: 'document', rel: 'viewer', via: 'parent', target: 'viewer' }]);
    expect(schema.closure.some((r) => r.ns === 'user')).toBe(false);
  });

  it('counts the rows a model compiles to without compiling it (what a model is refused on)', () => {
    expect(CompiledSchema.rowsOf(schema.namespaces)).toBe(schema.rows);
    // Includes through includes, cycles of includes and arrows: 64 relations each including the next 15 and one arrow.
    const relations = Object.fromEntries(
      Array.from({ length: 64 }, (_, i) => [`r${i}`, { includes: [...Array.from({ length: 15 }, (_, k) => `r${(i + 1 + k) % 64}`), `r0->r${i}`] }]),
    );
    const dense = [{ name: 'dense', relations }, ...schema.namespaces];
    expect(CompiledSchema.rowsOf(dense)).toBe(new CompiledSchema(dense).rows);
    expect(CompiledSchema.rowsOf(dense)).toBe(64 * 64 + 64 + schema.rows);
  });

  it('knows which relations exist', () => {
    expect(problemType(() => schema.assertRelation('document', 'viewer'))).toBe('no error');
    expect(problemType(() => schema.assertRelation('document', 'member'))).toBe('unknown-relation');
    expect(problemType(() => schema.assertRelation('user', 'anything'))).toBe('no error');
    expect(problemType(() => schema.assertRelation('folder', 'viewer'))).toBe('namespace-not-found');
  });

  it("names the namespace's relations when refusing one, and the nearest when it looks like a typo of it", () => {
    const detail = (relation: string) => {
      try {
        schema.assertRelation('document', relation);
      } catch (error) {
        return (error as DomainError).detail;
      }
    };
    const declared = Object.keys(DOCUMENT_RELATIONS).sort().join(', ');
    expect(detail('veiwer')).toBe(`namespace document declares no relation veiwer (did you mean viewer?); it declares ${declared}`);
    expect(detail('member')).toBe(`namespace document declares no relation member; it declares ${declared}`);
    const empty = new CompiledSchema([{ name: 'note', relations: {} }]);
    expect(() => empty.assertRelation('note', 'viewer')).toThrow('namespace note declares no relation viewer; it declares none');
  });
});

describe('agent scope masks', () => {
  it.each([
    [['document:viewer'], 'document', 'viewer', true],
    [['document:viewer'], 'document', 'editor', false],
    [['document:*'], 'document', 'editor', true],
    [['*:viewer'], 'folder', 'viewer', true],
    [['*:*'], 'anything', 'at_all', true],
    [['check:read', 'grant:read'], 'document', 'viewer', false],
    [[], 'document', 'viewer', false],
    [['document'], 'document', 'viewer', false],
    [['viewer'], 'document', 'viewer', false],
  ])('%j covers %s:%s: %s', (scope, ns, rel, expected) => {
    expect(scopeCovers(scope, ns, rel)).toBe(expected);
  });
});

describe("an agent's masks", () => {
  const scopes: Record<string, readonly string[] | null> = { reader: ['document:viewer'], unscoped: null };
  const admits = (subject: string, namespace: string, relation: string) =>
    masksAdmit(parseRef(subject, 'subject'), namespace, relation, (id) => scopes[id]);

  it('admit any subject but an agent, registered or not', () => {
    expect(admits('user:reader', 'document', 'editor')).toBe(true);
    expect(admits('group:nobody', 'folder', 'viewer')).toBe(true);
  });

  it('admit a registered agent within its scope only', () => {
    expect(admits('agent:reader', 'document', 'viewer')).toBe(true);
    expect(admits('agent:reader', 'document', 'editor')).toBe(false);
    expect(admits('agent:reader', 'folder', 'viewer')).toBe(false);
  });

  it('refuse an agent that is not registered, or whose scope is not known', () => {
    expect(admits('agent:gone', 'document', 'viewer')).toBe(false);
    expect(admits('agent:unscoped', 'document', 'viewer')).toBe(false);
  });
});

describe('references', () => {
  it('splits <namespace>:<id> at the first colon', () => {
    expect(parseRef('user:alice@example.com', 'subject')).toEqual({ ns: 'user', id: 'alice@example.com' });
  });

  it('names the kind and the value, cut to 300 characters, when refusing one', () => {
    expect(() => parseRef('alice', 'subject')).toThrow(/^subject "alice" /);
    expect(() => parseRef(`user:${'x'.repeat(400)}`, 'object')).toThrow(`object "user:${'x'.repeat(295)}" `);
  });

  it.each(['alice', 'User:alice', 'user:', ':alice', 'user:a:b', 'user:a b', `user:${'x'.repeat(257)}`])('rejects %s', (value) => {
    expect(problemType(() => parseRef(value, 'subject'))).toBe('invalid-subject');
    expect(problemType(() => parseRef(value, 'object'))).toBe('invalid-object');
  });
});
