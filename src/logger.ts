import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';

/** The log, on standard output; a command of the command line logs on standard error, as its output is on standard output. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, destination: 'stdout' | 'stderr' = 'stdout'): Logger {
  const options = { level: config.LOG_LEVEL, base: { service: 'grantd' }, redact: ['req.headers.authorization'] };
  return destination === 'stdout' ? pino(options) : pino(options, pino.destination({ dest: 2, sync: true }));
}
