import { EdgeLists } from './edge-lists.ts';
import { sameWindow, type GrantWindow } from './grant-window.ts';
import type { NodeNames } from './node-names.ts';
import type { Triple } from './refs.ts';
import { WindowedGrants } from './windowed-grants.ts';
import type { UnitsOfWork } from './work-meter.ts';

/**
 * From how many pairs a node's list gets a map to its pairs. A check asks the object side whether
 * a node holds a relation, so it gets one early; the subject side is searched only to remove a
 * grant (the object side has already told whether a grant is new), so it is scanned far longer.
 */
const INDEX_FROM = { holders: 16, objects: 1024 } as const;

/**
 * A GrantIndex's grants as edges between its nodes (NodeNames), indexed both ways: from an object
 * to its relations and their holders (a check walks backwards from the object) and from a subject
 * to its relations and their objects (a listing walks forwards from the subject; its groups are its
 * `member` objects). The edges are integers in typed arrays (EdgeLists), which the garbage
 * collector does not trace.
 *
 * Grants with a window (docs/model.md#time-bound-grants) are kept aside with their windows
 * (WindowedGrants), and have an edge only while in force: the walks never look at a window, so
 * grants without one cost nothing more. `advance` brings the edges to the clock before a walk: each
 * boundary it crosses costs O(log k) for k windowed grants, and no other grant is read.
 */
export class GrantEdges {
  /** Per object node: (relation, holder) pairs. */
  readonly grantsOn = new EdgeLists(INDEX_FROM.holders);
  /** Per subject node: (relation, object) pairs. */
  readonly grantsBy = new EdgeLists(INDEX_FROM.objects);
  /**
   * Per subject node: its `member` pairs again, so that finding a subject's groups, which every
   * check does, reads those alone and not all the subject's grants (hundreds for a user at L).
   */
  readonly memberships = new EdgeLists(INDEX_FROM.objects);
  /**
   * The grants with a window, with their windows: usually one a grant, but a catch-up may hold a
   * grant's old and new windows for a moment (see flip); null there is the grant without a window.
   * Their edges are in the lists while one of their windows is in force at the instant advanced to.
   */
  readonly windowed: WindowedGrants;
  /** Grants held (edges). */
  size = 0;
  /** Bumped by every change of the edges. */
  private changes = 0;
  private readonly member: number;

  constructor(private readonly names: NodeNames) {
    this.member = names.member;
    this.windowed = new WindowedGrants(names.member, (subject, relation, object, held) => this.holdEdge(subject, relation, object, held));
  }

  /** Bumped by every change of the grants held and of the nodes named: what a walk or a ranking read is valid for one version. */
  get version(): number {
    // Both only grow, so their sum changes whenever either does.
    return this.changes + this.names.changes;
  }

  /** Adds the grant with its window (null: none); false when it was already held so. */
  add(grant: Triple, window: GrantWindow | null): boolean {
    const subject = this.names.nodeFor(grant.subject);
    const object = this.names.nodeFor(grant.object);
    const relation = this.names.relationNumber(grant.relation);
    const aside = this.windowed.windowsOf(subject, relation, object);
    if (window === null && aside === undefined) return this.addEdge(subject, relation, object);
    const windows = aside ?? this.plainWindows(subject, relation, object);
    if (windows.some((held) => sameWindow(held, window))) return false;
    this.setWindows(subject, relation, object, [...windows, window]);
    return true;
  }

  /** Removes the grant, whatever its window; false when it was not held. */
  remove(grant: Triple): boolean {
    const subject = this.names.nodeOf(grant.subject);
    const object = this.names.nodeOf(grant.object);
    const relation = this.names.relationOf(grant.relation);
    if (subject === undefined || object === undefined || relation === undefined) return false;
    if (!this.windowed.holds(subject, relation, object)) return this.removeEdge(subject, relation, object);
    this.setWindows(subject, relation, object, []);
    return true;
  }

  /** Removes the grant with this window if held, else adds it (GrantIndex.flip). */
  flip(grant: Triple, window: GrantWindow | null): void {
    const subject = this.names.nodeFor(grant.subject);
    const object = this.names.nodeFor(grant.object);
    const relation = this.names.relationNumber(grant.relation);
    const aside = this.windowed.windowsOf(subject, relation, object);
    if (window === null && aside === undefined) {
      if (!this.removeEdge(subject, relation, object)) this.addEdge(subject, relation, object);
      return;
    }
    const windows = aside ?? this.plainWindows(subject, relation, object);
    const at = windows.findIndex((held) => sameWindow(held, window));
    this.setWindows(subject, relation, object, at >= 0 ? windows.filter((_, i) => i !== at) : [...windows, window]);
  }

  /** Whether the node is the subject of a grant in force. */
  isSubject(node: number): boolean {
    return this.grantsBy.from(node) !== this.grantsBy.to(node);
  }

  /** The objects the node is a direct member of, into `groups`. */
  groupsOf(node: number, groups: number[]): number[] {
    return this.memberships.othersWith(node, this.member, groups);
  }

  /** Packs the lists and the windowed grants to exactly what they hold (EdgeLists.compact), yielding between units. */
  *compacting(): UnitsOfWork {
    yield* this.grantsOn.compacting();
    yield* this.grantsBy.compacting();
    yield* this.memberships.compacting();
    this.windowed.compact();
  }

  /** The windows of a grant not kept aside: none, or the one of a grant without a window. */
  private plainWindows(subject: number, relation: number, object: number): (GrantWindow | null)[] {
    return this.grantsOn.has(object, relation, subject) ? [null] : [];
  }

  /**
   * Holds the grant with these windows, its edge in the lists while one is in force. A grant aside
   * names its nodes and relation as a grant in the lists does, so that they keep their numbers
   * while it is out of force.
   */
  private setWindows(subject: number, relation: number, object: number, windows: (GrantWindow | null)[]): void {
    const wasAside = this.windowed.holds(subject, relation, object);
    const aside = !(windows.length === 0 || (windows.length === 1 && windows[0] === null));
    // Not aside: the grant without a window (held) or none.
    let held = windows.length > 0;
    if (aside) held = this.windowed.set(subject, relation, object, windows);
    else this.windowed.delete(subject, relation, object);
    if (aside && !wasAside) this.names.name(subject, relation, object);
    this.holdEdge(subject, relation, object, held);
    if (wasAside && !aside) this.names.unname(subject, relation, object);
  }

  private holdEdge(subject: number, relation: number, object: number, held: boolean): void {
    if (held) this.addEdge(subject, relation, object);
    else this.removeEdge(subject, relation, object);
  }

  /** Puts the grant in the lists; false when it was there. */
  private addEdge(subject: number, relation: number, object: number): boolean {
    if (this.grantsOn.has(object, relation, subject)) return false;
    this.grantsOn.add(object, relation, subject);
    this.grantsBy.add(subject, relation, object);
    if (relation === this.member) this.memberships.add(subject, relation, object);
    this.names.name(subject, relation, object);
    this.size++;
    this.changes++;
    return true;
  }

  /** Takes the grant out of the lists; false when it was not there. */
  private removeEdge(subject: number, relation: number, object: number): boolean {
    if (!this.grantsOn.remove(object, relation, subject)) return false;
    this.grantsBy.remove(subject, relation, object);
    if (relation === this.member) this.memberships.remove(subject, relation, object);
    this.names.unname(subject, relation, object);
    this.size--;
    this.changes++;
    return true;
  }
}
