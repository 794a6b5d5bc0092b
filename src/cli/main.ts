import { Command, CommanderError } from 'commander';
import { ServiceError } from '../client/index.ts';
import { ConfigError } from '../config.ts';
import { DomainError } from '../errors.ts';
import { packageVersion } from '../package-root.ts';
import { API_ENVIRONMENT, commandName, explainCallError } from './api.ts';
import { registerAgents } from './agents.ts';
import { registerChanges } from './changes.ts';
import { registerCheck } from './check.ts';
import { exitQuietlyOnClosedPipe } from './closed-pipe.ts';
import { CliError } from './errors.ts';
import { registerExplain } from './explain.ts';
import { registerExport } from './export.ts';
import { registerGrants } from './grants.ts';
import { registerImport } from './import.ts';
import { registerKeys } from './keys.ts';
import { registerMigrate } from './migrate.ts';
import { registerModel } from './model-command.ts';
import { registerNamespaces } from './namespaces.ts';
import { registerOAuth } from './oauth.ts';
import { registerServe } from './serve-command.ts';
import { registerSubjects } from './subjects.ts';
import { registerKey, registerTenant } from './tenant.ts';
import { SERVER_ENVIRONMENT } from './usage.ts';

/** Every command, one module each, in the order `grantd --help` lists them: a new command is one more line. */
const COMMANDS = [
  registerServe,
  registerMigrate,
  registerTenant,
  registerKey,
  registerCheck,
  registerExplain,
  registerSubjects,
  registerGrants,
  registerNamespaces,
  registerAgents,
  registerKeys,
  registerOAuth,
  registerImport,
  registerExport,
  registerChanges,
  registerModel,
];

function program(): Command {
  const root = new Command('grantd')
    .description('grantd: multi-tenant relationship-based authorization service')
    .version(packageVersion(), '-V, --version', 'print the version of grantd')
    .helpCommand(true)
    .showHelpAfterError('(grantd <command> --help tells more)')
    .configureOutput({ outputError: (text, write) => write(`grantd: ${text.replace(/^error: /, '')}`) })
    .exitOverride();
  for (const register of COMMANDS) register(root);
  pointToHelp(root);
  root.addHelpText(
    'after',
    `${SERVER_ENVIRONMENT}${API_ENVIRONMENT.replace(
      'Environment:',
      'Environment of the API commands (check, explain, subjects, grants, namespaces, agents, keys, oauth, import, export, changes, schema):',
    )}`,
  );
  return root;
}

/**
 * Subcommands answer usage errors as the root does (exit 2, one line), then name in full the command
 * whose --help tells its usage: `grants add` is no command, and a bare "add --help" would read as one.
 */
function pointToHelp(command: Command): void {
  for (const sub of command.commands) {
    sub.showHelpAfterError(`(grantd ${commandName(sub)} --help tells its usage)`).exitOverride();
    pointToHelp(sub);
  }
}

/** Runs the command line; resolves to the exit status. */
async function main(argv: string[]): Promise<number> {
  let running: Command | undefined;
  exitQuietlyOnClosedPipe(() => running !== undefined && commandName(running) === 'serve');
  const root = program().hook('preAction', (_root, action) => {
    running = action;
  });
  try {
    await root.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return commanderExit(error);
    if (error instanceof ServiceError && running) throw explainCallError(running, error);
    throw error;
  }
}

/** Help and version asked for exit 0; a usage error (told already by commander) exits 2, as help shown for want of a command does. */
function commanderExit(error: CommanderError): number {
  return ['commander.helpDisplayed', 'commander.version'].includes(error.code) ? 0 : 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof CliError) {
      process.stderr.write(`${error.message.startsWith('grantd') ? '' : 'grantd: '}${error.message}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    const known = error instanceof ConfigError || error instanceof DomainError;
    process.stderr.write(`grantd: ${known ? error.message : String((error as Error | undefined)?.stack ?? error)}\n`);
    process.exitCode = 1;
  },
);
