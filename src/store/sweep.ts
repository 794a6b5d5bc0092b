import type { Logger } from 'pino';

/**
 * Runs `sweepChunk` every `intervalMs` in the background, chunk after chunk while chunks come back
 * full (`chunk` rows), so that a large backlog neither holds locks long nor waits for many
 * intervals; one sweep at a time. Logs what a sweep deleted, and a failure (retried at the next
 * interval). Returns what stops it.
 */
export function startSweep(
  { intervalMs, chunk, what }: { intervalMs: number; chunk: number; what: string },
  sweepChunk: () => Promise<number>,
  logger: Logger,
): () => void {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      let deleted = 0;
      for (let swept = chunk; swept === chunk; deleted += swept) swept = await sweepChunk();
      if (deleted > 0) logger.info({ deleted }, `${what} deleted`);
    } catch (error) {
      logger.warn({ err: { message: (error as Error).message } }, `sweep of ${what} failed; retried at the next interval`);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void sweep(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
