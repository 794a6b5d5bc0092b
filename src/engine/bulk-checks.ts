import type { DomainError } from '../errors.ts';
import { isCheckTooComplex } from './budget.ts';
import type { CheckWalk, RememberedWalk, WalkMemory, WalkTarget } from './check-walk.ts';
import type { GrantEdges } from './grant-edges.ts';
import type { NodeNames } from './node-names.ts';
import type { Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import type { Walk } from './walk-pairs.ts';
import { WorkMeter, type Slice } from './work-meter.ts';

/** What a bulk asks of each query besides its check: see GrantIndex.checkAll. */
export interface BulkOptions {
  admits?: (query: Triple) => boolean;
  slice?: Slice;
}

/** The checks of a bulk on a GrantIndex, each answered as its single check, walks remembered for the checks after them. */
export class BulkChecks {
  constructor(
    private readonly names: NodeNames,
    private readonly edges: GrantEdges,
    private readonly checks: CheckWalk,
  ) {}

  /** GrantIndex.checkAll. */
  async checkAll(
    schema: CompiledSchema,
    queries: readonly Triple[],
    budget: number,
    { admits = () => true, slice = WorkMeter.unmetered() }: BulkOptions,
  ): Promise<(boolean | DomainError)[]> {
    const answers = new Array<boolean | DomainError>(queries.length);
    // Each query's object node and relation number, looked up once: the key of its walk, and the
    // walk's start until the bulk first gives way (a catch-up meanwhile may renumber nodes). The
    // schema's relations are numbered first, as for one check: one no grant names may still be held.
    this.names.tablesOf(schema);
    const targets: (WalkTarget | undefined)[] = queries.map((query) => this.checks.targetOf(query));
    // A lone check has no later check to keep a walk for.
    const walks =
      queries.length > 1
        ? new RememberedWalks(
            targets.map((target) => walkKey(target!)),
            budget,
          )
        : null;
    let version = this.edges.version;
    for (let i = 0; i < queries.length; i++) {
      if (slice.due()) {
        targets.fill(undefined);
        await slice.pause();
      }
      if (version !== this.edges.version) {
        walks?.forget();
        version = this.edges.version;
      }
      walks?.next();
      try {
        answers[i] = admits(queries[i]!) && this.checks.check(schema, queries[i]!, budget, walks, targets[i]);
      } catch (error) {
        if (!isCheckTooComplex(error)) throw error;
        answers[i] = error;
      }
    }
    return answers;
  }
}

/** The key of the walk a target needs (null: nothing to walk). */
const walkKey = ({ start, relation }: WalkTarget): string | null => (start === undefined || relation === undefined ? null : `${start} ${relation}`);

/**
 * The walks of one bulk kept for the checks after them, by object node and relation number. Only a
 * walk that a later check of the bulk needs is kept, and no more pairs in all than a few checks'
 * budgets: a bulk of a thousand checks on different objects keeps nothing.
 */
class RememberedWalks implements WalkMemory {
  private readonly walks = new Map<string, RememberedWalk>();
  /** How many checks from the current one on need each walk. */
  private readonly wanted = new Map<string, number>();
  private position = -1;
  private pairs = 0;

  constructor(
    private readonly keys: readonly (string | null)[],
    private readonly budget: number,
  ) {
    for (const key of keys) if (key !== null) this.wanted.set(key, (this.wanted.get(key) ?? 0) + 1);
  }

  current(): string | null {
    return this.keys[this.position] ?? null;
  }

  /** The bulk moves on to its next check. */
  next(): void {
    const key = this.keys[++this.position];
    if (key !== null && key !== undefined) this.wanted.set(key, this.wanted.get(key)! - 1);
  }

  get(key: string): RememberedWalk | undefined {
    return this.walks.get(key);
  }

  remember(key: string, walk: Walk, length: number, finished: boolean): void {
    if ((this.wanted.get(key) ?? 0) === 0 || this.pairs + length > REMEMBERED_BUDGETS * this.budget) return;
    this.pairs += length;
    const levels = walk.levelEnds.filter((end) => end <= length).length;
    this.walks.set(key, {
      objects: walk.objects.slice(0, length),
      relations: walk.relations.slice(0, length),
      levelEnds: walk.levelEnds.slice(0, levels),
      levelCosts: walk.levelCosts.slice(0, levels),
      finished,
    });
  }

  /** The grants changed: what was walked before no longer holds. */
  forget(): void {
    this.walks.clear();
    this.pairs = 0;
  }
}

/** The pairs one bulk keeps at most, in check budgets. */
const REMEMBERED_BUDGETS = 4;
