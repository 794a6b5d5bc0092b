import type { Command } from 'commander';
import { DEFAULT_CONFIG, loadConfig } from '../config.ts';

/** `grantd serve`; the server's modules are loaded only when it runs, so that the other commands start fast. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(`start the HTTP server (PORT, default ${DEFAULT_CONFIG.PORT}); the settings below are its environment`)
    .action(async () => {
      const { serveCommand } = await import('./serve.ts');
      process.exitCode = await serveCommand(loadConfig());
    });
}
