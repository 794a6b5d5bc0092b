import type { Command } from 'commander';
import { API_ENVIRONMENT, apiClient } from './api.ts';

/**
 * `grantd schema apply|export` and `grantd test`: the model file's commands. Their module (and the
 * YAML reader) is loaded only when one of them runs, so that the other commands do not start slower.
 */
export function registerModel(program: Command): void {
  const schema = program.command('schema').description("make a tenant's namespaces match a model file, or print them as one");
  schema
    .command('apply')
    .description("create and update the tenant's namespaces to match the file's (scope grant:write); --prune also deletes the others")
    .argument('<file>', 'a model file (YAML or JSON; docs/model.md#model-files)')
    .option('--prune', 'delete namespaces the file does not hold')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (file: string, options: { prune?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'grant:write');
      process.exitCode = await (await import('./model.ts')).schemaApplyCommand(client, file, options.prune ?? false);
    });
  schema
    .command('export')
    .description("print the tenant's namespaces as a model file (scope grant:read)")
    .option('--json', 'JSON instead of YAML')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      process.exitCode = await (await import('./model.ts')).schemaExportCommand(client, options.json ?? false);
    });
  program
    .command('test')
    .description("run a model file's assertions against grantd's engine, in this process: no server, no database")
    .argument('<file>', 'a model file with assertions (docs/model.md#model-files)')
    .action(async (file: string) => {
      process.exitCode = await (await import('./model.ts')).testCommand(file);
    });
}
