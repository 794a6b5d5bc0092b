import { isCheckTooComplex, overBudget } from './budget.ts';
import type { EdgeLists } from './edge-lists.ts';
import type { GrantEdges } from './grant-edges.ts';
import { MarkedNodes, type NodeSet } from './marked-nodes.ts';
import type { NodeNames } from './node-names.ts';
import type { Ref, Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { impliedOn, MAX_ARROW_DEPTH, NO_ARROWS, type SchemaTables } from './schema-tables.ts';
import { THE_WALK, type Walk } from './walk-pairs.ts';

/** Groups a check matches pair by pair; past this many it matches through a set, reading the smaller side. */
export const FEW_GROUPS = 8;
/** A node no grant names: the subject of a walk that has none to stop at (ListingWalks.holders). */
export const NO_NODE = -1;
/** A level's cost not known: the budget stopped the walk while counting it. */
const UNKNOWN_COST = -1;
/** The walk's last level, at MAX_ARROW_DEPTH: it ends there, with no cost counted. */
const LAST_LEVEL = -2;

/** Where a check's walk starts: its object's node and its relation's number (undefined: none, so nothing to walk). */
export interface WalkTarget {
  start: number | undefined;
  relation: number | undefined;
}

/** A walk of a check kept for other subjects: its pairs, its levels (Walk's), and whether it ended (else the budget stopped it). */
export interface RememberedWalk {
  objects: number[];
  relations: number[];
  levelEnds: number[];
  levelCosts: number[];
  finished: boolean;
}

/** The walks a bulk keeps for its later checks (RememberedWalks), as the bulk's current check reads and feeds them. */
export interface WalkMemory {
  /** The walk an earlier check of the bulk kept for the current check's object and relation, if any. */
  recalled(): RememberedWalk | undefined;
  /** Keeps the first `length` pairs of the walk (whole levels) if a later check needs it and there is room. */
  remember(walk: Walk, length: number, finished: boolean): void;
}

/**
 * The check of a GrantIndex: does the subject, or an object it is a direct member of, hold the
 * relation on the object? Walks backwards from the object breadth-first: the relations that imply
 * the checked one, then through arrows to related objects, at most MAX_ARROW_DEPTH arrows deep.
 * The walk, the subject's groups and an arrow's related objects are kept here and reused: a check
 * (or a listing's walk, ListingWalks) runs start to end in one go.
 */
export class CheckWalk {
  /** The process's one walk: each check or listing walk uses it start to end, in one synchronous call. */
  readonly walk = THE_WALK;
  /** The steps the last walk took (walkBackwards), when it ended within its budget: what a rule evaluator charges for it. */
  steps = 0;
  /** Whether the last walk, asked to expand its last level, denied with pairs left past it (walkBackwards). */
  cutShort = false;
  private readonly groups: number[] = [];
  private readonly everyGroups: number[] = [];
  private readonly subjectAndGroups = new MarkedNodes();
  readonly related: number[] = [];
  /** How many pairs of the walk under way have been matched against the subject. */
  private matched = 0;
  private readonly grantsOn: EdgeLists;

  constructor(
    private readonly names: NodeNames,
    private readonly edges: GrantEdges,
  ) {
    this.grantsOn = edges.grantsOn;
  }

  /**
   * GrantIndex.check, or one check of a bulk (`walks`: the bulk's; `target`: the query's targetOf,
   * when read in this turn of the event loop, the grants' present state).
   */
  check(
    schema: CompiledSchema,
    query: Triple,
    budget: number,
    walks: WalkMemory | null,
    target: WalkTarget | undefined = undefined,
    maxDepth = MAX_ARROW_DEPTH,
    expandLast = false,
  ): boolean {
    // Numbers the schema's relations first: one that no grant names may still be held through another.
    const tables = this.names.tablesOf(schema);
    this.steps = 0;
    this.cutShort = false;
    // A relation neither a grant nor the schema names, no one holds.
    const { start, relation } = target ?? this.targetOf(query);
    if (start === undefined || relation === undefined) return false;
    const holders = this.holdersOf(query.subject);
    if (holders === null) return false;
    const { self, groups } = holders;
    const remembered = walks?.recalled();
    const answer = remembered === undefined ? undefined : this.heldOnAny(remembered, self, groups, budget);
    if (answer !== undefined) return answer;
    const walk = this.walk;
    try {
      const allowed = this.walkBackwards(tables, start, relation, self, groups, budget, maxDepth, expandLast);
      // A walk that found the subject stopped early: only a finished one serves other subjects.
      if (!allowed) walks?.remember(walk, walk.size, true);
      return allowed;
    } catch (error) {
      // Only the pairs matched before the budget ran out: the rest were never looked at.
      if (isCheckTooComplex(error)) walks?.remember(walk, this.matched, false);
      throw error;
    }
  }

  /**
   * Who holds for the subject (docs/model.md#public-grants): the subject and its groups, and its
   * namespace's `*` with the groups of that; null when none of them holds a grant in force (then
   * nothing is held). When only the `*` holds, it stands in for the subject.
   */
  holdersOf(subject: Ref): { self: number; groups: number[] } | null {
    const names = this.names;
    const ns = names.namespaceOf(subject.ns);
    // No node is in a namespace that has no number: neither the subject nor its `*`.
    if (ns === undefined) return null;
    let self = names.nodeIn(ns, subject.id);
    const every = names.wildcardIn(ns);
    const selfHolds = self !== undefined && this.edges.isSubject(self);
    const everyHolds = every !== undefined && every !== self && this.edges.isSubject(every);
    if (!everyHolds) return selfHolds ? { self: self!, groups: this.edges.groupsOf(self!, this.groups) } : null;
    if (!selfHolds) self = every;
    const groups = this.edges.groupsOf(self!, this.groups);
    if (self !== every) {
      groups.push(every);
      for (const group of this.edges.groupsOf(every, this.everyGroups)) groups.push(group);
    }
    return { self: self!, groups };
  }

  /** Where a query's walk starts. */
  targetOf(query: Triple): WalkTarget {
    return { start: this.names.nodeOf(query.object), relation: this.names.relationOf(query.relation) };
  }

  /**
   * The walk of `check`, into `this.walk`; throws once it has taken more than `budget` steps. Steps
   * are the subject's groups, the pairs of each level expanded and the grants read from them through
   * arrows, as grantd_check_walk counts them; and, for a subject of more than FEW_GROUPS groups, the
   * smaller of its groups and each pair's holders, which matching them costs here. With `expandLast`,
   * a walk denied at `maxDepth` expands that level too, charged as any, and says in `cutShort` whether
   * it reached a pair not visited yet (as grantd_check_walk's report_too_deep).
   */
  walkBackwards(
    tables: SchemaTables<number>,
    start: number,
    relation: number,
    self: number,
    groups: number[],
    budget: number,
    maxDepth = MAX_ARROW_DEPTH,
    expandLast = false,
  ): boolean {
    const walk = this.walk;
    walk.clear();
    this.cutShort = false;
    // Nothing is numbered during a walk, so the array stays where it is.
    const nodeNs = this.names.nodeNs;
    for (const implied of impliedOn(tables, nodeNs[start]!, relation)) walk.visit(start, implied);
    const grantsOn = this.grantsOn;
    const many = this.manyGroups(self, groups);
    let steps = groups.length;
    this.matched = 0;
    for (let depth = 0, from = 0; from < walk.size; depth++) {
      const to = walk.size;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        const held = walk.relations[i]!;
        if (many !== null) {
          steps += Math.min(many.size, grantsOn.countWith(object, held));
          if (steps > budget) throw overBudget(budget);
        }
        if (this.heldBy(object, held, self, groups, many)) {
          this.steps = steps;
          return true;
        }
      }
      this.matched = to;
      walk.endLevel(to, UNKNOWN_COST);
      if (depth === maxDepth && !expandLast) {
        walk.levelCosts[depth] = LAST_LEVEL;
        break;
      }
      const before = steps;
      steps += to - from;
      // The level's reads are counted before any is followed: no pair is matched before the next
      // level, so a level that takes the check past its budget is refused whole, before its visits.
      // What they reach is gathered as they are counted, and visited once all are, in their order.
      const { reached, reachedTargets } = walk;
      let gathered = 0;
      for (let i = from; i < to && steps <= budget; i++) {
        const object = walk.objects[i]!;
        for (const { via, targets } of tables.arrows.get(nodeNs[object]!)?.get(walk.relations[i]!) ?? NO_ARROWS) {
          const count = grantsOn.othersAt(object, via, reached, gathered, budget - steps);
          steps += count;
          if (steps > budget) break;
          for (const end = gathered + count; gathered < end; gathered++) reachedTargets[gathered] = targets;
        }
      }
      if (steps > budget) throw overBudget(budget);
      walk.levelCosts[depth] = steps - before;
      for (let k = 0; k < gathered; k++) {
        const next = reached[k]!;
        for (const target of reachedTargets[k]!) for (const implied of impliedOn(tables, nodeNs[next]!, target)) walk.visit(next, implied);
      }
      if (depth === maxDepth) {
        this.cutShort = walk.size > to;
        break;
      }
      from = to;
    }
    this.steps = steps;
    return false;
  }

  /**
   * The answer the check of another subject would give on a remembered walk: its levels matched
   * against this subject and charged as walkBackwards charges them (this subject's groups and their
   * matching, then each level's cost), so that a bulk answers each item exactly as its single check.
   * Undefined when the remembered walk ends before the answer does (the budget stopped it for its
   * own subject): then this subject's check walks afresh.
   */
  private heldOnAny(walk: RememberedWalk, self: number, groups: number[], budget: number): boolean | undefined {
    const many = this.manyGroups(self, groups);
    const grantsOn = this.grantsOn;
    let steps = groups.length;
    for (let level = 0, from = 0; level < walk.levelEnds.length; level++) {
      const to = walk.levelEnds[level]!;
      for (let i = from; i < to; i++) {
        if (many !== null) {
          steps += Math.min(many.size, grantsOn.countWith(walk.objects[i]!, walk.relations[i]!));
          if (steps > budget) throw overBudget(budget);
        }
        if (this.heldBy(walk.objects[i]!, walk.relations[i]!, self, groups, many)) return true;
      }
      const cost = walk.levelCosts[level]!;
      if (cost === LAST_LEVEL) return false;
      if (cost === UNKNOWN_COST) return undefined;
      steps += cost;
      if (steps > budget) throw overBudget(budget);
      from = to;
    }
    return walk.finished ? false : undefined;
  }

  /** The subject and its groups as a set, when they are more than FEW_GROUPS: matching them goes through it. */
  private manyGroups(self: number, groups: readonly number[]): NodeSet | null {
    return groups.length > FEW_GROUPS ? this.subjectAndGroups.mark(self, groups, this.names.nodeCount) : null;
  }

  /** Whether the subject or one of its groups holds `relation` on `object`; `many`: them as a set (manyGroups), when there are many. */
  private heldBy(object: number, relation: number, self: number, groups: number[], many: NodeSet | null): boolean {
    return many === null ? this.grantsOn.hasAny(object, relation, self, groups) : this.grantsOn.hasAnyOf(object, relation, many);
  }
}
