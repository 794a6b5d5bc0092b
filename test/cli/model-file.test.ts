import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModelFile } from '../../src/cli/model-file.ts';
import { testModelFile } from '../../src/cli/model-test.ts';

// Model files with requires, excludes and public grants (docs/model.md#model-files): what they accept
// and refuse, and where a refusal lies in the file.
const dir = mkdtempSync(join(tmpdir(), 'grantd-model-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (text: string): string => {
  const path = join(dir, `model-${files++}.yaml`);
  writeFileSync(path, text);
  return path;
};

/** The document model of docs/model.md#requires-and-excludes, a public page, and checks that follow from the definitions alone. */
const GUARDED = `namespaces:
  org: {relations: {member: {}}}
  folder: {relations: {viewer: {}}}
  document:
    relations:
      parent: {}
      owner: {}
      blocked: {}
      org: {}
      editor: {includes: [owner], excludes: [blocked]}
      viewer: {includes: [editor, parent->viewer], requires: [org->member], excludes: [blocked]}
  page: {relations: {viewer: {}}}
agents:
  - {external_id: bot, scope: ['page:viewer']}
grants:
  - {subject: 'user:*', relation: viewer, object: 'page:home'}
  - {subject: 'agent:*', relation: viewer, object: 'page:home'}
  - {subject: 'user:ann', relation: owner, object: 'document:d1'}
  - {subject: 'user:ann', relation: blocked, object: 'document:d1'}
  - {subject: 'org:acme', relation: org, object: 'document:d1'}
  - {subject: 'user:ann', relation: member, object: 'org:acme'}
assertions:
  - check: {subject: 'user:bob', relation: viewer, object: 'page:home'}
    allowed: true
  - check: {subject: 'user:*', relation: viewer, object: 'page:home'}
    allowed: true
  - check: {subject: 'user:ann', relation: owner, object: 'document:d1'}
    allowed: true
  - check: {subject: 'user:ann', relation: editor, object: 'document:d1'}
    allowed: false
  - check: {subject: 'user:ann', relation: viewer, object: 'document:d1'}
    allowed: false
  - objects: {namespace: page, subject: 'user:*', relation: viewer}
    expect: [home]
  - subjects: {object: 'page:home', relation: viewer, subject_namespace: user}
    expect: ['user:*', 'user:ann']
`;

describe('model files with requires, excludes and public grants', () => {
  it('accepts requires, excludes and <namespace>:* subjects, as the API would', async () => {
    const loaded = await loadModelFile(file(GUARDED));
    expect(loaded.model.namespaces.document!.relations!.viewer).toEqual({
      includes: ['editor', 'parent->viewer'],
      requires: ['org->member'],
      excludes: ['blocked'],
    });
    expect(loaded.model.grants[0]).toEqual({ subject: 'user:*', relation: 'viewer', object: 'page:home' });
  });

  // These expectations are the engine's answers under docs/model.md#requires-and-excludes (the owner's part of issue 42).
  it('answers its assertions by those rules', async () => {
    expect(await testModelFile(file(GUARDED))).toEqual({ assertions: 7, failures: [] });
  });

  it('refuses an undeclared relation under requires, at the reference', async () => {
    const path = file('namespaces:\n  doc:\n    relations:\n      org: {}\n      viewer: {requires: [org->member, member]}\n');
    await expect(loadModelFile(path)).rejects.toThrow(
      `${path}:5:40: namespaces.doc.relations.viewer.requires.1: relation viewer requires "member", but member is not declared`,
    );
  });

  it('refuses a same-object cycle through requires', async () => {
    const path = file('namespaces:\n  doc:\n    relations:\n      a: {requires: [b]}\n      b: {requires: [a]}\n');
    await expect(loadModelFile(path)).rejects.toThrow(
      `${path}:4:22: namespaces.doc.relations.a.requires.0: relations refer to each other in a cycle`,
    );
  });

  it('refuses a cycle through an exclusion across namespaces, naming it', async () => {
    const path = file(
      'namespaces:\n  document:\n    relations: {parent: {}, viewer: {excludes: [parent->banned]}}\n  folder:\n    relations: {child: {}, banned: {includes: [child->viewer]}}\n',
    );
    await expect(loadModelFile(path)).rejects.toThrow(
      'document#viewer excludes parent->banned -> folder#banned includes child->viewer -> document#viewer',
    );
  });

  it('refuses * as an object, in grants and assertions', async () => {
    const path = file(
      "namespaces: {page: {relations: {viewer: {}}}}\ngrants:\n  - {subject: 'user:ann', relation: viewer, object: 'page:*'}\nassertions:\n  - check: {subject: 'user:ann', relation: viewer, object: 'page:*'}\n    allowed: false\n",
    );
    await expect(loadModelFile(path)).rejects.toThrow(/grants\.0\.object: must be <namespace>:<id>[\s\S]*assertions\.0\.check\.object: must be/);
  });
});
