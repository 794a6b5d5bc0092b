import { DOCUMENT_NAMESPACE_EXAMPLE } from '../../contract/examples.ts';
import { parseRef } from '../../src/engine/refs.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';
import { LoopTurn, Slice } from '../../src/engine/work-meter.ts';

// Database-free, so that the engine's own tests (and `npm run mutate`) need not load the app to use
// them; a tenant's graph over a database is tenant-graph.ts's.

export const DOCUMENT_RELATIONS: RelationDefinitions = DOCUMENT_NAMESPACE_EXAMPLE.relations;

/** docs/model.md's worked example: editor excludes blocked; viewer includes editor and parent->viewer, requires org->member, excludes blocked. */
export const RULED_DOCUMENT_RELATIONS: RelationDefinitions = {
  parent: {},
  owner: {},
  blocked: {},
  org: {},
  editor: { includes: ['owner'], excludes: ['blocked'] },
  viewer: { includes: ['editor', 'parent->viewer'], requires: ['org->member'], excludes: ['blocked'] },
};

export const FOLDER_RELATIONS: RelationDefinitions = {
  parent: {},
  viewer: { includes: ['parent->viewer'] },
};

/** A grant as the in-memory index takes it, from its three strings. */
export const grant = (subject: string, relation: string, object: string) => ({
  subject: parseRef(subject, 'subject'),
  relation,
  object: parseRef(object, 'object'),
});

/**
 * A slice always spent (a turn of 0 ms): the work gives way at every checkpoint. It counts its
 * pauses and runs `onPause` at each, given the pause's number (0 first), before giving way.
 */
export class SpentSlice extends Slice {
  pauses = 0;
  constructor(private readonly onPause: (pause: number) => void = () => undefined) {
    super('a tenant', { wait: () => 0, spent: () => undefined }, new LoopTurn(0), performance);
  }
  override async pause(): Promise<void> {
    this.onPause(this.pauses++);
    await super.pause();
  }
}
