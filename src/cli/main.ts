import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { DomainError } from '../errors.ts';
import { importCommand } from './import.ts';
import { migrateCommand } from './migrate.ts';
import { serveCommand } from './serve.ts';
import { tenantCreateCommand } from './tenant.ts';

const USAGE = `grantd: multi-tenant relationship-based authorization service

Usage:
  grantd serve                        start the HTTP server (PORT, default 8080)
  grantd tenant create <name> [--json]  create a tenant and print its admin key once
  grantd migrate                      apply pending database migrations
  grantd import [file] [--json]       write the grants of an NDJSON file (standard input: none or -),
                                      one {"subject","relation","object"} per line, through the API

Environment:
  DATABASE_URL         postgres://... to use; unset: an embedded PostgreSQL under GRANTD_DATA_DIR
  GRANTD_DATA_DIR      folder of the embedded database (default ./.grantd)
  PORT, HOST           where to listen (default 0.0.0.0:8080)
  GRANTD_DB_POOL_SIZE  database connections per process (default 10)
  GRANTD_RATE_LIMIT    requests per second per API key (default: unlimited)
  GRANTD_GRAPH_MEMORY  grants and agents a process holds in memory to answer checks (default 3000000; 0: none)
  GRANTD_TENANT_POOL_SHARE  percent of the pool one tenant's checks and listings may hold at once (default 50)
  GRANTD_WORKERS       processes serving the API on one port: a number, or auto for one per core (default 1)
  LOG_LEVEL            fatal, error, warn, info (default), debug, trace or silent

Environment of grantd import:
  GRANTD_URL           the grantd to write to (default http://localhost:8080)
  GRANTD_KEY           an API key with scope grant:write (as the walk-through in README.md sets it)
`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
  });
  const [command, sub, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    process.stdout.write(USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
  // import is a client of a running grantd: the server's settings do not concern it.
  if (command === 'import' && rest.length === 0) return importCommand(sub, values.json);
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
    const known = error instanceof ConfigError || error instanceof DomainError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    process.stderr.write(`grantd: ${known ? (error as Error).message : String((error as Error).stack ?? error)}\n`);
    process.exitCode = 1;
  },
);
