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
    const targets = queries.map((query) => this.checks.targetOf(query));
    // A lone check has no later check to keep a walk for.
    const walks = queries.length > 1 ? RememberedWalks.of(targets, budget) : null;
    let version = this.edges.version;
    let gaveWay = false;
    for (let i = 0; i < queries.length; i++) {
      if (slice.due()) {
        gaveWay = true;
        await slice.pause();
      }
      if (version !== this.edges.version) {
        walks?.forget();
        version = this.edges.version;
      }
      walks?.next();
      try {
        answers[i] = admits(queries[i]!) && this.checks.check(schema, queries[i]!, budget, walks, gaveWay ? undefined : targets[i]);
      } catch (error) {
        if (!isCheckTooComplex(error)) throw error;
        answers[i] = error;
      }
    }
    return answers;
  }
}

/**
 * The key of the walk a target needs, a number (NO_WALK: nothing to walk): a node number is below
 * 2^31 (Int32Array), and a tenant's relations are far fewer than 2^21, so the key stays an exact integer.
 */
const walkKey = ({ start, relation }: WalkTarget): number => (start === undefined || relation === undefined ? NO_WALK : relation * 2 ** 31 + start);
const NO_WALK = -1;

/**
 * The walks of one bulk kept for the checks after them, by object node and relation number. Only a
 * walk that a later check of the bulk needs is kept, and no more pairs in all than a few checks'
 * budgets: a bulk of a thousand checks on different objects keeps nothing. Which checks share a
 * walk is found once, when the bulk begins, and a bulk of which no two do has none (null).
 */
class RememberedWalks implements WalkMemory {
  private readonly walks = new Map<number, RememberedWalk>();
  private position = -1;
  private pairs = 0;

  private constructor(
    /** Per check: its walk's key (NO_WALK: nothing to walk). */
    private readonly keys: readonly number[],
    /** Per check: whether a check after it needs its walk. */
    private readonly wantedLater: readonly boolean[],
    private readonly budget: number,
  ) {}

  /** The walks of a bulk of these targets; null when no two of its checks need the same walk. */
  static of(targets: readonly WalkTarget[], budget: number): RememberedWalks | null {
    const keys = targets.map(walkKey);
    const wantedLater = new Array<boolean>(keys.length).fill(false);
    const lastSeen = new Map<number, number>();
    let shared = false;
    keys.forEach((key, i) => {
      if (key === NO_WALK) return;
      const earlier = lastSeen.get(key);
      if (earlier !== undefined) shared = wantedLater[earlier] = true;
      lastSeen.set(key, i);
    });
    return shared ? new RememberedWalks(keys, wantedLater, budget) : null;
  }

  /** The bulk moves on to its next check. */
  next(): void {
    this.position++;
  }

  recalled(): RememberedWalk | undefined {
    const key = this.keys[this.position]!;
    return key === NO_WALK ? undefined : this.walks.get(key);
  }

  remember(walk: Walk, length: number, finished: boolean): void {
    if (!this.wantedLater[this.position] || this.pairs + length > REMEMBERED_BUDGETS * this.budget) return;
    this.pairs += length;
    let levels = 0;
    while (levels < walk.levels && walk.levelEnds[levels]! <= length) levels++;
    this.walks.set(this.keys[this.position]!, {
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
