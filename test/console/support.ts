import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { buildConsole } from '../../scripts/build-console.ts';
import { createApp } from '../../src/http/app.ts';
import { DEFAULT_HTTP_OPTIONS } from '../../src/http/options.ts';
import { useServices } from '../helpers.ts';

/**
 * grantd on a socket, its issuer its own address, serving a console built for this file into a
 * folder of its own (so that test files running at once never share one build).
 */
export function useConsoleServer({ accessTokenTtlSeconds = DEFAULT_HTTP_OPTIONS.accessTokenTtlSeconds } = {}) {
  const services = useServices();
  const state = { issuer: '', services, consoleDir: '' };
  const server = createServer();
  beforeAll(async () => {
    state.consoleDir = mkdtempSync(join(tmpdir(), 'grantd-console-'));
    await buildConsole(state.consoleDir);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    state.issuer = `http://localhost:${(server.address() as AddressInfo).port}`;
    server.on(
      'request',
      createApp(services, { ...DEFAULT_HTTP_OPTIONS, publicUrl: state.issuer, consoleDir: state.consoleDir, accessTokenTtlSeconds }),
    );
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    if (state.consoleDir) rmSync(state.consoleDir, { recursive: true, force: true });
  });
  return state;
}
