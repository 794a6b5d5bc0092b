import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SERVER_ENVIRONMENT } from '../src/cli/usage.ts';
import { ConfigError, EnvSchema, loadConfig } from '../src/config.ts';
import { packageRoot } from '../src/package-root.ts';

describe('configuration of limits and proxies', () => {
  it('leaves them unset by default: no proxy believed, no Redis, the default failure limit', () => {
    const config = loadConfig({});
    expect([config.GRANTD_TRUST_PROXY, config.REDIS_URL, config.GRANTD_AUTH_FAILURE_LIMIT]).toEqual([undefined, undefined, 20]);
  });

  it('takes a Redis URL, a failure limit and the proxies to believe', () => {
    const config = loadConfig({
      REDIS_URL: 'redis://:pw@cache.internal:6379/2',
      GRANTD_AUTH_FAILURE_LIMIT: '50',
      GRANTD_TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8',
    });
    expect(config.REDIS_URL).toBe('redis://:pw@cache.internal:6379/2');
    expect(config.GRANTD_AUTH_FAILURE_LIMIT).toBe(50);
    expect(config.GRANTD_TRUST_PROXY).toBe('loopback, 10.0.0.0/8,fd00::/8');
    expect(loadConfig({ GRANTD_TRUST_PROXY: '2' }).GRANTD_TRUST_PROXY).toBe(2);
  });

  it.each([
    ['REDIS_URL', 'http://cache:6379'],
    ['REDIS_URL', 'redis://'],
    ['GRANTD_AUTH_FAILURE_LIMIT', '0'],
    ['GRANTD_TRUST_PROXY', 'true'],
    ['GRANTD_TRUST_PROXY', '10.0.0.0/33'],
    ['GRANTD_TRUST_PROXY', 'proxy.internal'],
  ])('refuses %s=%s, naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}: `));
  });
});

/** The usage line of a setting: its name, then what it means. */
const lineOf = (name: string) => SERVER_ENVIRONMENT.split('\n').find((line) => line.startsWith(`  ${name} `));

describe('the usage text of the command line', () => {
  it.each(Object.keys(EnvSchema.shape))('has a line for %s, with its default', (name) => {
    expect(lineOf(name)).toMatch(/\(default\b/);
  });

  it("states the schema's own defaults", () => {
    for (const [name, value] of Object.entries(loadConfig({}))) expect(lineOf(name)).toContain(`(default ${value})`);
  });
});

/** The rows of docs/configuration.md's table of grantd's settings: each variable and its default as written there. */
function documentedDefaults(): Map<string, string> {
  const page = readFileSync(join(packageRoot(), 'docs', 'configuration.md'), 'utf8');
  const section = page.slice(page.indexOf('## Environment variables'), page.indexOf('The API commands'));
  return new Map([...section.matchAll(/^\| `([A-Z_]+)` \| ([^|]+) \|/gm)].map(([, name, value]) => [name!, value!.trim()]));
}

describe('docs/configuration.md', () => {
  const documented = documentedDefaults();

  it('lists every setting, and no other', () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(EnvSchema.shape).sort());
  });

  /** What the table's default should say: the schema's default as the environment writes it (7d, not its seconds), else unset. */
  const expected = (name: string, field: z.ZodTypeAny): unknown => {
    if (name === 'GRANTD_PUBLIC_URL') return '`http://localhost:<PORT>`'; // publicUrl()
    return field instanceof z.ZodDefault ? `\`${String(field._def.defaultValue())}\`` : expect.stringMatching(/^unset\b/);
  };

  it.each(Object.entries(EnvSchema.shape))("states %s's default as the schema has it", (name, field) => {
    expect(documented.get(name)).toEqual(expected(name, field));
  });
});
