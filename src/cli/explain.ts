import type { Command } from 'commander';
import type { Explanation } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient, printJson } from './api.ts';

type Step = Explanation['path'][number];

/** One grant of a path, and how it counts: `user:alice owner doc:d1 (includes:owner)`. */
const stepLine = (step: Step): string => `    ${step.subject} ${step.relation} ${step.object} (${step.via})`;

/** The answer and why, for people: the grants that confer it, or the reason it is denied. */
function explanationLines(asked: string, found: Explanation): string[] {
  if (found.allowed) {
    return [
      `allowed: ${asked}`,
      '  through:',
      ...found.path.map(stepLine),
      ...(found.requirements ?? []).flatMap((requirement) => [
        `  and requires ${requirement.reference}, held through:`,
        ...requirement.path.map(stepLine),
      ]),
    ];
  }
  return [
    `denied: ${asked}`,
    `  reason: ${found.reason}${found.detail ? ` (${found.detail})` : ''}`,
    ...(found.path.length > 0 ? ['  the excluding relation is held through:', ...found.path.map(stepLine)] : []),
  ];
}

/** `grantd explain <subject> <relation> <object>`: POST /v1/check/explain. */
export function registerExplain(program: Command): void {
  program
    .command('explain')
    .description('check as grantd check does, and say why: the grants that confer it, or why it is denied (scope check:read)')
    .argument('<subject>', 'who, <namespace>:<id>, e.g. user:alice')
    .argument('<relation>', 'the relation, e.g. viewer')
    .argument('<object>', 'on what, <namespace>:<id>, e.g. document:q3')
    .option('--json', 'print {"allowed", "path", "reason", ...} as the API answers it')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd explain user:alice viewer document:q3\n`)
    .action(async (subject: string, relation: string, object: string, options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'check:read');
      const found = await client.explain({ subject, relation, object });
      if (options.json) return printJson(found);
      process.stdout.write(`${explanationLines(`${subject} ${relation} ${object}`, found).join('\n')}\n`);
    });
}
