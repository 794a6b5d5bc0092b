import type { Command } from 'commander';
import { API_ENVIRONMENT, apiClient, positiveInteger, printJson, writeLines } from './api.ts';

interface SubjectsOptions {
  subjectNamespace: string;
  limit: number;
  all?: boolean;
  json?: boolean;
}

/** `grantd subjects <relation> <object>`: GET /v1/subjects, every page. */
export function registerSubjects(program: Command): void {
  program
    .command('subjects')
    .description('list the subjects that hold a relation on an object, ascending (scope check:read)')
    .argument('<relation>', 'the relation, e.g. viewer')
    .argument('<object>', 'on what, <namespace>:<id>, e.g. document:q3')
    .option('--subject-namespace <namespace>', 'the namespace of the subjects to list', 'user')
    .option('--limit <n>', 'print at most n subjects', positiveInteger, 100)
    .option('--all', 'print every subject that holds it (all pages)')
    .option('--json', 'print {"subjects": [...], "more": true|false}')
    .addHelpText(
      'after',
      `${API_ENVIRONMENT}\nExamples:\n  grantd subjects viewer document:q3\n  grantd subjects viewer document:q3 --subject-namespace agent\n`,
    )
    .action(async (relation: string, object: string, options: SubjectsOptions, command: Command) => {
      const { client } = apiClient(command, 'check:read');
      const wanted = options.all ? Infinity : options.limit;
      const found: string[] = [];
      let more = false;
      const query = { relation, object, subject_namespace: options.subjectNamespace, limit: Math.min(wanted, 1000) };
      for await (const subject of client.subjects.iterate(query)) {
        if (found.length === wanted) {
          more = true;
          break;
        }
        found.push(subject);
      }
      if (options.json) return printJson({ subjects: found, more });
      await writeLines(found.length > 0 ? found : ['(none)']);
      if (more) process.stdout.write('(more subjects hold it: use --all, or --limit)\n');
    });
}
