import { DomainError } from '../errors.ts';
import { overBudget, wholeBudgetProblem } from './budget.ts';
import type { CheckAnswer } from './checker.ts';
import type { RuleReference } from './model-rules.ts';
import { formatRef, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { MAX_ARROW_DEPTH } from './schema-tables.ts';

/**
 * A plain walk's answer to a part of a rule: UNDECIDED when it was asked to decide and is denied
 * within its arrows while a further arrow leads to a pair not yet visited (docs/model.md#model-limits).
 */
export const UNDECIDED = 'undecided';
export type PlainAnswer = CheckAnswer | typeof UNDECIDED;

/** The plain walk's answers for some queries, and the steps it took in all (charged to the check). */
export interface PlainAnswers {
  answers: PlainAnswer[];
  steps: number;
}

/**
 * What the rule evaluator reads of one tenant, from one state of it: the plain walk (what grants
 * confer under the schema's tables, the subject's groups and its namespace's `*` included, no agent
 * mask) and the objects an arrow leads to. PostgreSQL's reads await; an index's answer at once
 * (SyncRuleGraph), so that a check in memory is decided with no promise.
 */
export interface RuleGraph {
  /**
   * The plain walk's answer for each query, following at most `maxDepth` arrows; a query past `budget`
   * steps answers its problem; asked to `decide`, a query denied with arrows left answers UNDECIDED.
   */
  plain(queries: readonly Triple[], maxDepth: number, budget: number, decide: boolean): Promise<PlainAnswers>;
  /** The X of the grants (X, via, object) in force; null when there are more than `limit` (the check is past its budget). */
  related(object: Ref, via: string, limit: number): Promise<Ref[] | null>;
}

/** A RuleGraph whose reads answer at once (an index's). */
export interface SyncRuleGraph {
  plain(queries: readonly Triple[], maxDepth: number, budget: number, decide: boolean): PlainAnswers;
  related(object: Ref, via: string, limit: number): Ref[] | null;
}

/** A read the evaluation asks of its graph. */
type Read =
  | { kind: 'plain'; queries: readonly Triple[]; maxDepth: number; budget: number; decide: boolean }
  | { kind: 'related'; object: Ref; via: string; limit: number };
/**
 * A part's value: undefined when it is asked to be decided (it is under a `requires` or `excludes`
 * reference) and its answer lies past MAX_ARROW_DEPTH arrows from the checked object.
 */
type Decided = boolean | undefined;
type Evaluation = Generator<Read, Decided, PlainAnswers | Ref[] | null>;

/**
 * allowed(S, R, O) for a relation with rules (docs/model.md#what-a-check-means): its base (its own
 * grants and plain includes by the plain walk, then its other includes), then each of `requires`,
 * then none of `excludes`, each reference evaluated for the subject as a whole, arrows at most
 * MAX_ARROW_DEPTH in a chain from the checked object. A plain relation is asked of the plain walk.
 * Every part is charged to one budget: past it, the check-too-complex problem, never a guess. No
 * agent mask: the caller applies the subject's once, to the checked relation.
 */
export async function decideRules(graph: RuleGraph, schema: CompiledSchema, query: Triple, budget: number): Promise<RuledAnswer> {
  const rules = new RuleEvaluation(schema, query.subject, budget);
  const evaluation = rules.check(query);
  try {
    for (let step = evaluation.next(undefined as never); ;) {
      if (step.done) return { answer: step.value === true, steps: rules.steps };
      const read = step.value;
      step = evaluation.next(
        read.kind === 'plain'
          ? await graph.plain(read.queries, read.maxDepth, read.budget, read.decide)
          : await graph.related(read.object, read.via, read.limit),
      );
    }
  } catch (error) {
    return { answer: wholeBudgetProblem(error, budget), steps: rules.steps };
  }
}

/** A ruled check's answer, and the steps it took (charged to its budget): what a listing's page counts (docs/checks-and-listings.md#what-a-page-costs). */
export interface RuledAnswer {
  answer: CheckAnswer;
  steps: number;
}

/**
 * decideRules over reads that answer at once (an index's), run a read at a time, so that a long
 * evaluation can give way between its reads (docs/decisions.md#one-meter-for-all-work-in-memory):
 * `run` goes on until the answer, or until `due` says the caller's time is spent after a read.
 */
export class RuleDecision {
  private readonly rules: RuleEvaluation;
  private readonly evaluation: Evaluation;
  private step: IteratorResult<Read, Decided> | undefined;
  /** A plain read stopped between its parts: the answers and steps of the parts read. */
  private partial: PlainAnswers | undefined;

  constructor(
    private readonly graph: SyncRuleGraph,
    schema: CompiledSchema,
    query: Triple,
    private readonly budget: number,
  ) {
    this.rules = new RuleEvaluation(schema, query.subject, budget);
    this.evaluation = this.rules.check(query);
  }

  /** The steps the evaluation took so far, as its budget counts them. */
  get steps(): number {
    return this.rules.steps;
  }

  /** The answer; undefined when `due` stopped the evaluation after a read or a part of one (`run` again goes on from there). */
  run(due: () => boolean = () => false): CheckAnswer | undefined {
    try {
      let step = this.step ?? this.evaluation.next(undefined as never);
      while (!step.done) {
        const read = step.value;
        const answer = read.kind === 'plain' ? this.plainInParts(read, due) : this.graph.related(read.object, read.via, read.limit);
        if (answer !== undefined) step = this.evaluation.next(answer);
        if (answer === undefined || (!step.done && due())) {
          this.step = step;
          return undefined;
        }
      }
      return step.value === true;
    } catch (error) {
      return wholeBudgetProblem(error, this.budget);
    }
  }

  /**
   * A plain read, PLAIN_PART queries at a time (one read may ask for thousands of objects an arrow
   * leads to, each a walk), as the whole read would answer it; undefined when `due` stopped it
   * between parts.
   */
  private plainInParts(read: Extract<Read, { kind: 'plain' }>, due: () => boolean): PlainAnswers | undefined {
    const done = (this.partial ??= { answers: [], steps: 0 });
    while (done.answers.length < read.queries.length) {
      const queries = read.queries.slice(done.answers.length, done.answers.length + PLAIN_PART);
      const part = this.graph.plain(queries, read.maxDepth, read.budget - done.steps, read.decide);
      done.answers.push(...part.answers);
      done.steps += part.steps;
      // A part that ended on a problem (the budget) ends the read there, as the whole read would.
      if (part.answers.length < queries.length || typeof part.answers.at(-1) === 'object') break;
      if (done.answers.length < read.queries.length && due()) return undefined;
    }
    this.partial = undefined;
    return done;
  }
}

/** Queries of a plain read walked between two looks at the caller's time. */
const PLAIN_PART = 16;

/** One check's evaluation: generators that yield their reads, so that one evaluator serves both kinds of graph. */
class RuleEvaluation {
  /** The steps charged so far (the budget's count); only `charge` adds to it. */
  steps = 0;
  /** Values by depth, whether decided, relation and object: the same part asked again within one check is evaluated once. */
  private readonly known = new Map<string, Decided>();

  constructor(
    private readonly schema: CompiledSchema,
    private readonly subject: Ref,
    private readonly budget: number,
  ) {}

  /**
   * The checked relation: its base follows at most MAX_ARROW_DEPTH arrows and what lies past them is
   * not held, as for a plain relation; its `requires` and `excludes` references must be decided.
   */
  *check(query: Triple): Evaluation {
    return yield* this.allowed(query.relation, query.object, 0, false);
  }

  private *allowed(relation: string, object: Ref, depth: number, decide: boolean): Evaluation {
    const key = `${depth}${decide ? '!' : ''} ${relation} ${formatRef(object)}`;
    if (this.known.has(key)) return this.known.get(key);
    const value = yield* this.evaluate(relation, object, depth, decide);
    this.known.set(key, value);
    return value;
  }

  private *evaluate(relation: string, object: Ref, depth: number, decide: boolean): Evaluation {
    this.charge(1);
    let base = (yield* this.plain(relation, [object], depth, decide))[0];
    const rules = this.schema.rules.of(object.ns, relation);
    if (rules === undefined) return base;
    if (base !== true) base = either(base, yield* this.any(rules.includes, object, depth, decide));
    if (base === false) return false;
    for (const required of rules.requires) if (!(yield* this.decided(required, object, depth))) return false;
    for (const excluded of rules.excludes) if (yield* this.decided(excluded, object, depth)) return false;
    return base;
  }

  /** A `requires` or `excludes` reference: decided within the arrows left, or the check is refused. */
  private *decided(reference: RuleReference, object: Ref, depth: number): Generator<Read, boolean, PlainAnswers | Ref[] | null> {
    const value = yield* this.reference(reference, object, depth, true);
    if (value === undefined) throw tooDeep(reference, object);
    return value;
  }

  private *any(references: readonly RuleReference[], object: Ref, depth: number, decide: boolean): Evaluation {
    let value: Decided = false;
    for (const reference of references) {
      value = either(value, yield* this.reference(reference, object, depth, decide));
      if (value === true) return true;
    }
    return value;
  }

  /** ref(S, reference, object): the same object's relation, or the relation on some X an arrow leads to. */
  private *reference(reference: RuleReference, object: Ref, depth: number, decide: boolean): Evaluation {
    if (reference.kind === 'same') return yield* this.allowed(reference.relation, object, depth, decide);
    if (depth === MAX_ARROW_DEPTH && !decide) return false;
    const related = (yield { kind: 'related', object, via: reference.via, limit: this.budget - this.steps }) as Ref[] | null;
    if (related === null) throw overBudget(this.budget);
    this.charge(related.length);
    if (related.length === 0) return false;
    // An arrow past the last one followed, to objects that exist: what it would confer is unknown.
    if (depth === MAX_ARROW_DEPTH) return undefined;
    // Plain in every namespace: one walk for all of them (one statement in PostgreSQL).
    if (this.schema.rules.isPlainReference(object.ns, reference)) {
      return (yield* this.plain(reference.relation, related, depth + 1, decide)).reduce<Decided>(either, false);
    }
    let value: Decided = false;
    for (const next of related) {
      value = either(value, yield* this.allowed(reference.relation, next, depth + 1, decide));
      if (value === true) return true;
    }
    return value;
  }

  /** The plain walk's values for the relation on each object, `depth` arrows down the chain. */
  private *plain(relation: string, objects: readonly Ref[], depth: number, decide: boolean): Generator<Read, Decided[], PlainAnswers | Ref[] | null> {
    const queries = objects.map((object) => ({ subject: this.subject, relation, object }));
    const { answers, steps } = (yield {
      kind: 'plain',
      queries,
      maxDepth: MAX_ARROW_DEPTH - depth,
      budget: this.budget - this.steps,
      decide,
    }) as PlainAnswers;
    this.charge(steps);
    return answers.map((answer) => {
      if (answer === UNDECIDED) return undefined;
      if (typeof answer !== 'boolean') throw answer;
      return answer;
    });
  }

  private charge(steps: number): void {
    this.steps += steps;
    if (this.steps > this.budget) throw overBudget(this.budget);
  }
}

/**
 * The problem of a check with a `requires` or `excludes` reference that the arrows it may follow do
 * not decide (docs/model.md#model-limits): refused, never guessed.
 */
function tooDeep(reference: RuleReference, object: Ref): DomainError {
  return new DomainError(
    'check-too-complex',
    `deciding ${reference.text} on ${formatRef(object)} would follow more than ${MAX_ARROW_DEPTH} arrows in one chain from the checked object, the most a check follows; shorten the chain or the rule`,
  );
}

/** a or b, when either may be unknown (undefined): true if either is, false if both are. */
function either(a: Decided, b: Decided): Decided {
  if (a === true || b === true) return true;
  return a === undefined || b === undefined ? undefined : false;
}
