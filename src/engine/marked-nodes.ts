/**
 * A subject and its groups as a set of node numbers, for a check that matches them against a pair's
 * holders: marked in an array the index keeps, rather than a Set made per check, which for a subject
 * of thousands of groups cost a millisecond and as much garbage as the rest of the walk. One marking
 * is valid until the next `mark` (a check runs start to end in one go, and marks once).
 */
export class MarkedNodes implements Iterable<number> {
  private marks = new Uint32Array(1024);
  private epoch = 0;
  private self = 0;
  private groups: readonly number[] = [];
  /** How many distinct nodes are marked. */
  size = 0;

  /** Marks `self` and `groups` (node numbers below `nodeCount`), forgetting the marking before. */
  mark(self: number, groups: readonly number[], nodeCount: number): this {
    if (this.marks.length < nodeCount) this.marks = new Uint32Array(Math.max(nodeCount, this.marks.length * 2));
    if (this.epoch === 0xffff_ffff) {
      this.marks.fill(0);
      this.epoch = 0;
    }
    const epoch = ++this.epoch;
    const marks = this.marks;
    let size = 0;
    for (const node of groups) {
      if (marks[node] !== epoch) size++;
      marks[node] = epoch;
    }
    if (marks[self] !== epoch) size++;
    marks[self] = epoch;
    this.self = self;
    this.groups = groups;
    this.size = size;
    return this;
  }

  has(node: number): boolean {
    return this.marks[node] === this.epoch;
  }

  *[Symbol.iterator](): Iterator<number> {
    yield this.self;
    yield* this.groups;
  }
}

/** The nodes a walk matches holders against: a Set, or the index's MarkedNodes. */
export interface NodeSet extends Iterable<number> {
  readonly size: number;
  has(node: number): boolean;
}
