import type { GraphQuery } from './engine.ts';
import { MEMBER_RELATION, type Ref } from './refs.ts';
import type { CompiledSchema } from './schema.ts';

/** Longest chain of arrows (`T->R`) a check follows (API.md). */
export const MAX_ARROW_DEPTH = 16;

/** A grant as the index holds it. */
export interface IndexedGrant {
  subject: Ref;
  relation: string;
  object: Ref;
}

/** Holders of one (object, relation): an array while few (cheaper to keep), a set once many. */
type Holders = string[] | Set<string>;
const SET_FROM = 16;

/** The grants on one object: its namespace, and its relations each followed by their holders. */
class ObjectGrants {
  readonly entries: Array<string | Holders> = [];
  constructor(readonly ns: string) {}

  holders(relation: string): Holders | undefined {
    const { entries } = this;
    for (let i = 0; i < entries.length; i += 2) if (entries[i] === relation) return entries[i + 1] as Holders;
    return undefined;
  }
}

/**
 * One tenant's grants in memory, indexed the way a check walks them: from an object to its
 * relations and their holders, and from a subject to the objects it is a direct member of.
 * `check` answers exactly what the store's check statement answers (CHECK_SQL), without a round
 * trip. Subjects and objects are keyed `ns\0id` (ids cannot hold NUL); a holder's key is also the
 * key of that object's own grants, so a walk hashes one new string per check, not one per step.
 */
export class GrantIndex {
  private readonly objects = new Map<string, ObjectGrants>();
  private readonly memberOf = new Map<string, string[]>();
  /** Relation names, one string each (they compare by identity first). */
  private readonly relations = new Map<string, string>();
  /** Grants held. */
  size = 0;

  /** Adds the grant; false when it was already held. */
  add(grant: IndexedGrant): boolean {
    const subject = `${grant.subject.ns}\0${grant.subject.id}`;
    const objectKey = `${grant.object.ns}\0${grant.object.id}`;
    let object = this.objects.get(objectKey);
    if (!object) {
      object = new ObjectGrants(grant.object.ns);
      this.objects.set(objectKey, object);
    }
    const holders = object.holders(grant.relation);
    if (holders === undefined) object.entries.push(this.relation(grant.relation), [subject]);
    else if (Array.isArray(holders)) {
      if (holders.includes(subject)) return false;
      if (holders.length + 1 < SET_FROM) holders.push(subject);
      else object.entries[object.entries.indexOf(holders)] = new Set([...holders, subject]);
    } else {
      if (holders.has(subject)) return false;
      holders.add(subject);
    }
    if (grant.relation === MEMBER_RELATION) {
      const groups = this.memberOf.get(subject);
      if (groups) groups.push(objectKey);
      else this.memberOf.set(subject, [objectKey]);
    }
    this.size++;
    return true;
  }

  /** Removes the grant; false when it was not held. */
  remove(grant: IndexedGrant): boolean {
    const subject = `${grant.subject.ns}\0${grant.subject.id}`;
    const objectKey = `${grant.object.ns}\0${grant.object.id}`;
    const object = this.objects.get(objectKey);
    const holders = object?.holders(grant.relation);
    if (object === undefined || holders === undefined || !without(holders, subject)) return false;
    if ((Array.isArray(holders) ? holders.length : holders.size) === 0) {
      const at = object.entries.indexOf(holders);
      object.entries.splice(at - 1, 2);
      if (object.entries.length === 0) this.objects.delete(objectKey);
    }
    if (grant.relation === MEMBER_RELATION) {
      const groups = this.memberOf.get(subject)!;
      without(groups, objectKey);
      if (groups.length === 0) this.memberOf.delete(subject);
    }
    this.size--;
    return true;
  }

  /**
   * Removes the grant if held, else adds it. A logged change flipped the grant from the state its
   * statement found, so replaying a set of changes this way ends in the same state in any order.
   */
  flip(grant: IndexedGrant): void {
    if (!this.remove(grant)) this.add(grant);
  }

  /**
   * Does the subject, or an object it is a direct member of, hold the relation on the object?
   * Walks backwards from the object breadth-first: the relations that imply the checked one, then
   * through arrows to related objects, at most MAX_ARROW_DEPTH arrows deep. Agent scope masks are
   * the engine's, not the graph's.
   */
  check(schema: CompiledSchema, query: GraphQuery): boolean {
    const start = this.objects.get(`${query.object.ns}\0${query.object.id}`);
    if (start === undefined) return false;
    const self = `${query.subject.ns}\0${query.subject.id}`;
    const groups = this.memberOf.get(self);
    const walk = new Walk();
    for (const relation of schema.implied(start.ns, query.relation)) walk.visit(start, relation);
    for (let depth = 0, from = 0; from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        const holders = walk.objects[i]!.holders(walk.relations[i]!);
        if (holders !== undefined && holdsAny(holders, self, groups)) return true;
      }
      if (depth === MAX_ARROW_DEPTH) break;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        for (const arrow of schema.arrowsTo(object.ns, walk.relations[i]!)) {
          const related = object.holders(arrow.via);
          if (related === undefined) continue;
          for (const key of related) {
            const next = this.objects.get(key);
            if (next === undefined) continue;
            for (const relation of schema.implied(next.ns, arrow.target)) walk.visit(next, relation);
          }
        }
      }
      from = to;
    }
    return false;
  }

  private relation(name: string): string {
    const known = this.relations.get(name);
    if (known !== undefined) return known;
    this.relations.set(name, name);
    return name;
  }
}

function holdsAny(holders: Holders, self: string, groups: readonly string[] | undefined): boolean {
  if (Array.isArray(holders)) {
    if (holders.includes(self)) return true;
    return groups !== undefined && groups.some((group) => holders.includes(group));
  }
  if (holders.has(self)) return true;
  return groups !== undefined && groups.some((group) => holders.has(group));
}

/**
 * The (object, relation) targets of one check, in the order visited, each once. Most walks visit a
 * handful, found faster by scanning than by hashing; a long walk switches to a map.
 */
class Walk {
  readonly objects: ObjectGrants[] = [];
  readonly relations: string[] = [];
  private byObject: Map<ObjectGrants, string[]> | null = null;

  visit(object: ObjectGrants, relation: string): void {
    if (this.byObject === null) {
      for (let i = 0; i < this.objects.length; i++) if (this.objects[i] === object && this.relations[i] === relation) return;
      if (this.objects.length === SCAN_VISITS) {
        this.byObject = new Map();
        this.objects.forEach((o, i) => this.remember(o, this.relations[i]!));
      }
    }
    if (this.byObject !== null && !this.remember(object, relation)) return;
    this.objects.push(object);
    this.relations.push(relation);
  }

  /** False when already remembered. */
  private remember(object: ObjectGrants, relation: string): boolean {
    const relations = this.byObject!.get(object);
    if (relations === undefined) this.byObject!.set(object, [relation]);
    else if (relations.includes(relation)) return false;
    else relations.push(relation);
    return true;
  }
}
const SCAN_VISITS = 32;

function without(holders: Holders, value: string): boolean {
  if (!Array.isArray(holders)) return holders.delete(value);
  const at = holders.indexOf(value);
  if (at < 0) return false;
  holders[at] = holders[holders.length - 1]!;
  holders.pop();
  return true;
}
