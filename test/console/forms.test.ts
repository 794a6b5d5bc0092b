import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../src/client/index.ts';
import { parseNdjson } from '../../src/console/ndjson.ts';
import { problemsOf } from '../../src/console/problems.ts';
import { bodyOf, draftProblems, EMPTY_ROW } from '../../src/console/relations.ts';
import { utcOf } from '../../src/console/ui.tsx';

describe("the namespace form's live check", () => {
  const draft = (rows: [string, string][], name = 'document') => ({
    name,
    open: false,
    rows: rows.map(([n, includes]) => ({ ...EMPTY_ROW, name: n, includes })),
  });

  it('builds the body the server takes, includes split on commas and spaces', () => {
    expect(
      bodyOf(
        draft([
          ['owner', ''],
          ['viewer', 'owner, parent->viewer'],
          ['parent', ''],
        ]),
      ),
    ).toEqual({
      name: 'document',
      relations: { owner: {}, viewer: { includes: ['owner', 'parent->viewer'] }, parent: {} },
    });
    expect(bodyOf({ name: ' folder ', open: true, rows: [{ ...EMPTY_ROW, name: 'x', includes: 'y' }] })).toEqual({ name: 'folder' });
  });

  it('accepts what the server accepts', () => {
    expect(
      draftProblems(
        draft([
          ['owner', ''],
          ['viewer', 'owner parent->viewer'],
          ['parent', ''],
        ]),
      ),
    ).toEqual({});
  });

  it('names what the server would refuse, at the field the server would name', () => {
    expect(draftProblems(draft([['owner', 'nope']]))).toEqual({ relations: 'relation owner includes "nope", but nope is not declared' });
    expect(
      draftProblems(
        draft([
          ['a', 'b'],
          ['b', 'a'],
        ]),
      ).relations,
    ).toMatch(/cycle: a -> b -> a/);
    expect(draftProblems(draft([['a', 'a->']])).relations).toMatch(/must be a relation R or an arrow T->R/);
    expect(
      draftProblems(
        draft([
          ['a', ''],
          ['a', ''],
        ]),
      ),
    ).toEqual({ relations: 'relation a is declared twice' });
    expect(draftProblems(draft([['Bad', '']])).relations).toMatch(/Bad/);
    // A bad name does not hide the relations' own problem.
    expect(draftProblems(draft([['owner', 'nope']], 'Bad Name'))).toEqual({
      name: expect.stringMatching(/must match/),
      relations: 'relation owner includes "nope", but nope is not declared',
    });
  });
});

describe("the namespace form's requires and excludes", () => {
  const guarded = {
    name: 'document',
    open: false,
    rows: [
      { ...EMPTY_ROW, name: 'owner' },
      { ...EMPTY_ROW, name: 'blocked' },
      { ...EMPTY_ROW, name: 'org' },
      { name: 'viewer', includes: 'owner', requires: 'org->member', excludes: 'blocked, org->banned' },
    ],
  };

  it('sends only the lists a row fills', () => {
    expect(bodyOf(guarded).relations).toEqual({
      owner: {},
      blocked: {},
      org: {},
      viewer: { includes: ['owner'], requires: ['org->member'], excludes: ['blocked', 'org->banned'] },
    });
    expect(draftProblems(guarded)).toEqual({});
  });

  it('names an undeclared reference and a cycle through requires as the server would', () => {
    const unknown = { ...guarded, rows: [{ ...EMPTY_ROW, name: 'viewer', requires: 'member' }] };
    expect(draftProblems(unknown)).toEqual({ relations: 'relation viewer requires "member", but member is not declared' });
    const cycle = {
      ...guarded,
      rows: [
        { ...EMPTY_ROW, name: 'a', requires: 'b' },
        { ...EMPTY_ROW, name: 'b', requires: 'a' },
      ],
    };
    expect(draftProblems(cycle).relations).toMatch(/cycle, which no grant could end: a requires b -> b requires a -> a/);
  });

  it("finds a cycle through an exclusion that the draft would close with the tenant's other namespaces", () => {
    const folder = { name: 'folder', relations: { child: {}, banned: { includes: ['child->viewer'] } } };
    const document = {
      ...guarded,
      rows: [
        { ...EMPTY_ROW, name: 'parent' },
        { ...EMPTY_ROW, name: 'viewer', excludes: 'parent->banned' },
      ],
    };
    expect(draftProblems(document)).toEqual({});
    expect(draftProblems(document, [folder, { name: 'user', relations: null }]).relations).toMatch(
      /document#viewer excludes parent->banned -> folder#banned includes child->viewer -> document#viewer/,
    );
    // The draft replaces a namespace of its name: the old definition is no part of the model.
    expect(draftProblems(document, [{ name: 'document', relations: { viewer: { excludes: ['viewer'] } } }])).toEqual({});
  });
});

describe('the NDJSON import', () => {
  it('reads one grant a line, skips blank lines, and names every bad line by number', () => {
    const text = [
      '{"subject":"user:a","relation":"viewer","object":"doc:1"}',
      '',
      'not json',
      '{"subject":"a","relation":"viewer","object":"doc:1"}',
      '{"subject":"user:a","relation":"viewer","object":"doc:1","extra":1}\r',
    ].join('\n');
    const parsed = parseNdjson(text);
    expect(parsed.grants).toEqual([{ subject: 'user:a', relation: 'viewer', object: 'doc:1' }]);
    expect(parsed.invalid.map((i) => i.line)).toEqual([3, 4, 5]);
    expect(parsed.invalid[0]!.message).toBe('not JSON');
    expect(parsed.invalid[1]!.message).toMatch(/^subject: /);
  });
});

describe('where a problem is shown', () => {
  const problem = (type: string, errors?: { path: string; message: string }[]) =>
    new ProblemError({ type, status: 400, title: 'Some title', detail: 'some detail', attempts: 1, errors });

  it("puts a validation problem's issues at the fields they name, and joins two at one field", () => {
    const shown = problemsOf(
      problem('invalid-request', [
        { path: 'body.subject', message: 'first' },
        { path: 'body.subject', message: 'second' },
        { path: 'body.object', message: 'third' },
      ]),
      ['subject', 'object'],
    );
    expect(shown).toEqual({
      fields: { subject: { title: 'Some title', detail: 'first; second' }, object: { title: 'Some title', detail: 'third' } },
    });
  });

  it('puts a typed problem at the field its type names, and anything else above the form', () => {
    expect(problemsOf(problem('unknown-relation'), ['relation'], { 'unknown-relation': 'relation' })).toEqual({
      fields: { relation: { title: 'Some title', detail: 'some detail' } },
    });
    expect(problemsOf(problem('rate-limited'), ['relation'])).toEqual({ fields: {}, form: { title: 'Some title', detail: 'some detail' } });
    expect(problemsOf(problem('invalid-request', [{ path: 'body.other', message: 'x' }]), ['relation']).form).toBeDefined();
    expect(problemsOf(new Error('boom'), [])).toEqual({ fields: {}, form: { title: 'Unexpected error', detail: 'boom' } });
  });
});

describe("the grant form's times", () => {
  it('sends a datetime-local value as the UTC instant it names in local time, nothing for an empty one, and an unreadable one as typed', () => {
    expect(utcOf('2099-01-01T12:30')).toBe(new Date(2099, 0, 1, 12, 30).toISOString());
    expect(utcOf('2099-01-01T12:30')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(utcOf('')).toBeUndefined();
    expect(utcOf('tomorrow')).toBe('tomorrow');
  });
});
