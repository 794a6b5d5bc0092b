import type { Command } from 'commander';
import type { Grant } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient, writeLines } from './api.ts';
import { grantsQuery, withGrantFilters } from './grants.ts';

/** Grants a page: the most GET /v1/grants gives at once. */
const PAGE = 1000;

/** `grantd export`: every grant (or those matching the filters) as NDJSON, the lines `grantd import` reads. */
export function registerExport(program: Command): void {
  withGrantFilters(program.command('export'))
    .description(
      'print every grant as NDJSON, one {"subject","relation","object"[,"not_before","expires_at"]} a line, as grantd import reads (scope grant:read)',
    )
    .addHelpText(
      'after',
      `${API_ENVIRONMENT}\nExample, copying a tenant's grants into another one (whose namespaces and agents exist):\n` +
        '  GRANTD_KEY=$FROM grantd export > grants.ndjson && GRANTD_KEY=$TO grantd import grants.ndjson\n',
    )
    .action(async (options: Parameters<typeof grantsQuery>[0], command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      let count = 0;
      let lines: string[] = [];
      for await (const grant of client.grants.iterate({ ...grantsQuery(options), limit: PAGE }, { timeoutMs: 60_000 })) {
        lines.push(JSON.stringify(lineOf(grant)));
        count++;
        if (lines.length === PAGE) {
          await writeLines(lines);
          lines = [];
        }
      }
      await writeLines(lines);
      process.stderr.write(`grantd export: ${count} grants\n`);
    });
}

/** A grant as a line `grantd import` reads: its triple, and its times when it has them. */
const lineOf = ({ subject, relation, object, not_before, expires_at }: Grant) => ({
  subject,
  relation,
  object,
  ...(not_before === null ? {} : { not_before }),
  ...(expires_at === null ? {} : { expires_at }),
});
