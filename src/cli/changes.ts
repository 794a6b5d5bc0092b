import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { ServiceError, type Change } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient, commandName, positiveInteger, writeLines } from './api.ts';

/** How long `--follow` waits before asking again at the end of the feed, or after a failure that may pass. */
const POLL_MS = 1000;
/** Failures `--follow` waits out: the node is restarting or busy, or not reachable for now. */
const PASSING = new Set(['unavailable', 'network-error', 'timeout']);

/**
 * `grantd changes`: the changes feed (docs/consistency.md#the-changes-feed) as NDJSON, one change a
 * line with its revision; with --follow it keeps polling, for shipping to a log store, and a
 * follower started again with --after the last revision it printed goes on with no gap or repeat.
 */
export function registerChanges(program: Command): void {
  program
    .command('changes')
    .description("print the tenant's changes as NDJSON, one a line, each with its revision (scope grant:read)")
    .option('--after <revision>', 'start after this revision (the last one printed, to resume)', nonEmpty)
    .option('--follow', 'keep printing new changes as they come, until interrupted')
    .option('--limit <n>', 'changes a request (1 to 1000)', positiveInteger, 1000)
    .addHelpText(
      'after',
      `${API_ENVIRONMENT}\nExample, shipping the feed to a file and resuming where it stopped:\n` +
        '  grantd changes --follow --after "$(tail -n1 changes.ndjson | jq -r .revision)" >> changes.ndjson\n',
    )
    .action(async (options: { after?: string; follow?: boolean; limit: number }, command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      let after = options.after;
      for (;;) {
        let page: { changes: Change[]; next_revision: string };
        try {
          page = await client.changes.list({ ...(after === undefined ? {} : { after }), limit: options.limit }, { timeoutMs: 30_000 });
        } catch (error) {
          if (!(options.follow && error instanceof ServiceError && PASSING.has(error.type))) throw error;
          process.stderr.write(`grantd ${commandName(command)}: ${error.type}: ${error.detail}; asking again in 1 s\n`);
          await sleep(POLL_MS);
          continue;
        }
        await writeLines(page.changes.map((change) => JSON.stringify(change)));
        after = page.next_revision;
        if (page.changes.length < options.limit) {
          if (!options.follow) return;
          await sleep(POLL_MS);
        }
      }
    });
}

function nonEmpty(value: string): string {
  if (value === '') throw new InvalidArgumentError('a revision, as printed in a change or a write');
  return value;
}
