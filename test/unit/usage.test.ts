import { describe, expect, it } from 'vitest';
import { USAGE } from '../../src/cli/usage.ts';
import { EnvSchema, loadConfig } from '../../src/config.ts';

/** The usage line of a setting: its name, then what it means. */
const lineOf = (name: string) => USAGE.split('\n').find((line) => line.startsWith(`  ${name} `));

describe('the usage text of the command line', () => {
  it.each(Object.keys(EnvSchema.shape))('has a line for %s, with its default', (name) => {
    expect(lineOf(name)).toMatch(/\(default\b/);
  });

  it("states the schema's own defaults", () => {
    for (const [name, value] of Object.entries(loadConfig({}))) expect(lineOf(name)).toContain(`(default ${value})`);
  });
});
