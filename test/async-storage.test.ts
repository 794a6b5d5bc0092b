import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { offWhenIdle } from '../src/async-storage.ts';

/** What the storage holds for a timer set now, once it fires (after whatever settles in between). */
const seenLater = (storage: AsyncLocalStorage<string>) => new Promise<string | undefined>((resolve) => setTimeout(() => resolve(storage.getStore())));

describe('offWhenIdle', () => {
  it('keeps the storage on while a run is under way, though another has settled', async () => {
    const storage = new AsyncLocalStorage<string>();
    const whileRunning = offWhenIdle(storage);
    let finish!: () => void;
    const second = whileRunning(() =>
      storage.run('second', async () => {
        await new Promise<void>((resolve) => (finish = resolve));
        return storage.getStore();
      }),
    );
    expect(await whileRunning(() => storage.run('first', async () => storage.getStore()))).toBe('first');
    finish();
    expect(await second).toBe('second');
  });

  it('switches the storage off when the last run under way has settled, whether it resolved or failed, and on again with the next run', async () => {
    const storage = new AsyncLocalStorage<string>();
    const whileRunning = offWhenIdle(storage);
    let later!: Promise<string | undefined>;
    await whileRunning(() => storage.run('one', async () => void (later = seenLater(storage))));
    expect(await later).toBeUndefined();
    await expect(
      whileRunning(() =>
        storage.run('two', async () => {
          later = seenLater(storage);
          throw new Error('failed');
        }),
      ),
    ).rejects.toThrow('failed');
    expect(await later).toBeUndefined();
    expect(await whileRunning(() => storage.run('three', async () => storage.getStore()))).toBe('three');
  });

  it('counts a work that throws before it returns a promise as settled', async () => {
    const storage = new AsyncLocalStorage<string>();
    const whileRunning = offWhenIdle(storage);
    let later!: Promise<string | undefined>;
    await expect(
      whileRunning(() =>
        storage.run('thrown', () => {
          later = seenLater(storage);
          throw new Error('at once');
        }),
      ),
    ).rejects.toThrow('at once');
    expect(await later).toBeUndefined();
  });
});
