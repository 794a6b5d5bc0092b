import { existsSync } from 'node:fs';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

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
