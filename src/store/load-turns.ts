/**
 * Loads of held tenants run a few at a time (each on a connection of the loads' own, indexing in turns
 * of the event loop); the others wait, and when a turn ends the waiting tenant with the highest
 * priority (its uses, for HeldTenants) goes next.
 */
export class LoadTurns {
  private readonly waiting: { tenantId: string; start: () => void }[] = [];
  private running = 0;

  constructor(
    private readonly max: number,
    private readonly priorityOf: (tenantId: string) => number,
  ) {}

  /** Runs `load` in one of the turns, once one is free. */
  async run<T>(tenantId: string, load: () => Promise<T>): Promise<T> {
    if (this.running < this.max) this.running++;
    else await new Promise<void>((start) => this.waiting.push({ tenantId, start }));
    try {
      return await load();
    } finally {
      this.next();
    }
  }

  /** Starts every load waiting (they find the holder closed and end). */
  releaseAll(): void {
    for (const { start } of this.waiting.splice(0)) start();
  }

  /** Hands the turn that ended to the waiting tenant of the highest priority, if any. */
  private next(): void {
    if (this.waiting.length === 0) {
      this.running--;
      return;
    }
    let next = 0;
    for (let i = 1; i < this.waiting.length; i++) {
      if (this.priorityOf(this.waiting[i]!.tenantId) > this.priorityOf(this.waiting[next]!.tenantId)) next = i;
    }
    this.waiting.splice(next, 1)[0]!.start();
  }
}
