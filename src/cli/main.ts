import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { DomainError } from '../errors.ts';
import { importCommand } from './import.ts';
import { migrateCommand } from './migrate.ts';
import { serveCommand } from './serve.ts';
import { tenantCreateCommand } from './tenant.ts';
import { USAGE } from './usage.ts';

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      prune: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, sub, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    process.stdout.write(USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
  // import is a client of a running grantd: the server's settings do not concern it.
  if (command === 'import' && rest.length === 0) return importCommand(sub, values.json);
  // So are the model commands (grantd test needs no server at all), loaded only when asked for: the others do not start slower.
  if (command === 'schema' && sub === 'apply' && rest.length === 1) return (await import('./model.ts')).schemaApplyCommand(rest[0]!, values.prune);
  if (command === 'schema' && sub === 'export' && rest.length === 0) return (await import('./model.ts')).schemaExportCommand(values.json);
  if (command === 'test' && sub !== undefined && rest.length === 0) return (await import('./model.ts')).testCommand(sub);
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serveCommand(config);
    case 'migrate':
      return migrateCommand(config);
    case 'tenant':
      if (sub === 'create' && rest.length === 1) return tenantCreateCommand(config, rest[0]!, values.json);
      break;
  }
  process.stderr.write(`grantd: unknown command ${positionals.join(' ')}\n\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const known =
      error instanceof ConfigError || error instanceof DomainError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    process.stderr.write(`grantd: ${known ? (error as Error).message : String((error as Error).stack ?? error)}\n`);
    process.exitCode = 1;
  },
);
