import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
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

/** Debian's chromium; CI installs it (apt-get install -y chromium). */
export const CHROMIUM = '/usr/bin/chromium';

/** Headless Chromium with a profile of its own in `userDataDir`, at a desktop's size. */
export async function launchChromium(userDataDir: string): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: this test needs Debian's chromium (apt-get install -y chromium)`);
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    headless: true,
    viewport: { width: 1280, height: 900 },
  });
}

/** Signs `page` in to the console with its client `clientId` and an admin key, and waits for the overview. */
export async function signIn(page: Page, issuer: string, clientId: string, adminKey: string): Promise<void> {
  await page.goto(`${issuer}/console/?client_id=${clientId}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/v1\/oauth\/consent\//);
  await page.fill('#api_key', adminKey);
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}
