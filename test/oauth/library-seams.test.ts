import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';

// The seams into oidc-provider's internals are written against one version of it, which the module
// checks as it loads: a serving node loads it before it listens (src/cli/serve.ts), so another
// version installed stops grantd at start-up.

const SEAMS = '../../src/auth/oauth/library-seams.ts';
const installed = (JSON.parse(readFileSync('node_modules/oidc-provider/package.json', 'utf8')) as { version: string }).version;

afterEach(() => {
  vi.doUnmock('node:module');
  vi.resetModules();
});

describe("the OAuth library's seams", () => {
  it('are written against the version installed', async () => {
    const { LIBRARY_VERSION } = await import(SEAMS);
    expect(LIBRARY_VERSION).toBe(installed);
  });

  it('refuse to load over another version, naming both and what to do', async () => {
    vi.resetModules();
    vi.doMock('node:module', async (original) => {
      const actual = await original<typeof import('node:module')>();
      const createRequire = (from: string | URL) => {
        const require = actual.createRequire(from);
        return Object.assign((id: string) => (id === 'oidc-provider/package.json' ? { version: '9.14.0' } : require(id)), require);
      };
      return { ...actual, default: { ...actual, createRequire }, createRequire };
    });
    await expect(import(SEAMS)).rejects.toThrow(
      `oidc-provider 9.14.0 is installed, but grantd's OAuth server reaches into oidc-provider ${installed}'s internals (src/auth/oauth/library-seams.ts): install ${installed} (npm ci)`,
    );
  });

  it('accept only that exact version', async () => {
    const { assertLibraryVersion, LIBRARY_VERSION } = await import(SEAMS);
    expect(() => assertLibraryVersion(LIBRARY_VERSION)).not.toThrow();
    for (const other of ['9.13.4', '9.14.0', '10.0.0', '9.13.3-beta.1']) expect(() => assertLibraryVersion(other)).toThrow(/is installed, but/);
  });
});
