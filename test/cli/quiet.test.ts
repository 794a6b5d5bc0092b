import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OIDC_PROVIDER_RUNTIME_WARNING, withoutWarning } from '../../src/cli/quiet.ts';

describe('withoutWarning', () => {
  afterEach(() => vi.restoreAllMocks());

  it('drops the one warning, coloured or not, passes on every other, and restores console.warn', async () => {
    const printed = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const original = console.warn;
    await withoutWarning(OIDC_PROVIDER_RUNTIME_WARNING, async () => {
      console.warn(OIDC_PROVIDER_RUNTIME_WARNING);
      console.warn(`\x1b[31;1m${OIDC_PROVIDER_RUNTIME_WARNING}\x1b[0m`);
      console.warn('oidc-provider WARNING: something else');
      console.warn(OIDC_PROVIDER_RUNTIME_WARNING, 'with more');
    });
    expect(console.warn).toBe(original);
    expect(printed.mock.calls).toEqual([['oidc-provider WARNING: something else'], [OIDC_PROVIDER_RUNTIME_WARNING, 'with more']]);
  });

  it('restores console.warn when the load fails', async () => {
    const original = console.warn;
    await expect(withoutWarning(OIDC_PROVIDER_RUNTIME_WARNING, () => Promise.reject(new Error('no module')))).rejects.toThrow('no module');
    expect(console.warn).toBe(original);
  });

  it('is the line the installed oidc-provider prints', () => {
    const library = dirname(createRequire(import.meta.url).resolve('oidc-provider/package.json'));
    const index = readFileSync(join(library, 'lib', 'index.js'), 'utf8');
    const prefix = readFileSync(join(library, 'lib', 'helpers', 'attention.js'), 'utf8');
    expect(prefix).toContain('`oidc-provider WARNING: ${str}`');
    expect(index).toContain(`attention.warn('${OIDC_PROVIDER_RUNTIME_WARNING.replace('oidc-provider WARNING: ', '')}')`);
  });
});
