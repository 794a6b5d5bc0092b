import type { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What runs `work` as one of `storage`'s runs under way (`work` itself, or code it calls, enters
 * `storage.run`), switching the storage off when the last run under way has settled. On Node 20, a
 * storage once run makes promise hooks track every promise of the process from then on, a check's
 * included; while it is off none of its runs is under way, and its next `run` switches it on again
 * (docs/decisions.md#the-oauth-librarys-request-context-is-on-only-while-it-answers).
 */
export function offWhenIdle(storage: AsyncLocalStorage<unknown>): <T>(work: () => Promise<T>) => Promise<T> {
  let underWay = 0;
  return (work) => {
    underWay++;
    return (async () => work())().finally(() => {
      if (--underWay === 0) storage.disable();
    });
  };
}
