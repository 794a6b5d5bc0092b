import type { Command } from 'commander';
import { API_ENVIRONMENT, apiClient, printJson } from './api.ts';

/** `grantd check <subject> <relation> <object>`: POST /v1/check. */
export function registerCheck(program: Command): void {
  program
    .command('check')
    .description('ask whether a subject holds a relation on an object (scope check:read)')
    .argument('<subject>', 'who, <namespace>:<id>, e.g. user:alice')
    .argument('<relation>', 'the relation, e.g. viewer')
    .argument('<object>', 'on what, <namespace>:<id>, e.g. document:q3')
    .option('--json', 'print {"allowed": true|false}')
    .option('--exit-status', 'exit 0 when allowed and 3 when not, for shell conditions')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd check user:alice viewer document:q3\n`)
    .action(async (subject: string, relation: string, object: string, options: { json?: boolean; exitStatus?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'check:read');
      const { allowed } = await client.check({ subject, relation, object });
      if (options.json) printJson({ allowed });
      else process.stdout.write(`${allowed ? 'allowed' : 'denied'}: ${subject} ${relation} ${object}\n`);
      if (options.exitStatus && !allowed) process.exitCode = 3;
    });
}
