import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantNameOf } from '../../src/store/tenants.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api } from '../oauth/support.ts';
import { launchChromium, signIn } from './chromium.ts';
import { useConsoleServer } from './support.ts';

// The console's layout and notices, each as a person sees them in Chromium.
const server = useConsoleServer();
const POLL = { timeout: 15_000 };
let context: BrowserContext;
let userDataDir: string;
let tenant: TestTenant;
let page: Page;

beforeAll(async () => {
  tenant = await newTenant(server.services);
  const created = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', {
    name: 'console',
    type: 'public',
    redirect_uris: [`${server.issuer}/console/callback`],
    scopes: ['admin'],
  });
  expect(created.status).toBe(201);
  // Relations declared in neither alphabetical order nor the one the database keeps (jsonb: by length, then bytes).
  const relations = { viewer: { includes: ['editor'] }, editor: { includes: ['owner'] }, owner: {}, blocked: {} };
  expect((await api(server.issuer, tenant.adminKey, 'POST', '/v1/namespaces', { name: 'document', relations })).status).toBe(201);
  const writes = Array.from({ length: 60 }, (_, i) => ({
    subject: `user:u${String(i).padStart(2, '0')}`,
    relation: 'viewer',
    object: 'document:q3',
  }));
  expect((await api(server.issuer, tenant.adminKey, 'POST', '/v1/grants/batch', { writes })).status).toBe(200);
  userDataDir = mkdtempSync(join(tmpdir(), 'grantd-console-chromium-'));
  context = await launchChromium(userDataDir);
  page = await context.newPage();
  await signIn(page, server.issuer, String(created.body!.client_id), tenant.adminKey);
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

async function go(path: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: heading, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await expect.poll(() => page.locator('.loading').count(), POLL).toBe(0);
  expect(page.url()).toMatch(new RegExp(`#/${path}$`));
}

const section = (name: string) => page.locator('section').filter({ has: page.getByRole('heading', { name, exact: true }) });

describe('the console in Chromium', () => {
  it("names the tenant it is signed in to in its top bar and in the tab's title, on every page", async () => {
    const name = await tenantNameOf(server.services.db, tenant.id);
    for (const [path, heading] of [
      ['', 'Overview'],
      ['keys', 'API keys'],
    ] as const) {
      await go(path, heading);
      expect(await page.getByRole('banner').locator('.tenant').textContent()).toBe(name);
      await expect.poll(() => page.title(), POLL).toBe(`${heading} · ${name} · grantd console`);
    }
  });

  it('shows the grant form above a full page of grants, in sight without scrolling', async () => {
    await go('grants', 'Grants');
    await expect.poll(() => section('Current grants').locator('tbody tr').count(), POLL).toBe(50);
    const form = await section('Create a grant').getByRole('button', { name: 'Create grant' }).boundingBox();
    const table = await section('Current grants').getByRole('table').boundingBox();
    expect(form!.y).toBeLessThan(table!.y);
    expect(form!.y + form!.height).toBeLessThan(page.viewportSize()!.height);
  });

  it('takes down a success notice when the next submission fails, so that only its problem shows', async () => {
    await go('grants', 'Grants');
    const create = section('Create a grant');
    const grant = async (subject: string) => {
      await create.getByLabel('Subject', { exact: true }).fill(subject);
      await create.getByLabel('Relation', { exact: true }).fill('owner');
      await create.getByLabel('Object', { exact: true }).fill('document:q9');
      await create.getByRole('button', { name: 'Create grant' }).click();
    };
    await grant('user:alice');
    await page.getByText('Created grant user:alice owner on document:q9.').waitFor();
    await grant('alice');
    await expect.poll(() => create.getByLabel('Subject', { exact: true }).getAttribute('aria-invalid'), POLL).toBe('true');
    expect(await page.locator('.notice').count()).toBe(0);

    // The same on the namespaces page: a created namespace's notice goes when the next name is refused.
    await go('namespaces', 'Namespaces');
    const form = section('Create a namespace');
    await form.getByLabel('Name', { exact: true }).fill('folder');
    await form.getByRole('button', { name: 'Create namespace' }).click();
    await page.getByText('Namespace folder created.').waitFor();
    await form.getByLabel('Name', { exact: true }).fill('folder');
    await form.getByRole('button', { name: 'Create namespace' }).click();
    await expect.poll(() => form.getByLabel('Name', { exact: true }).getAttribute('aria-invalid'), POLL).toBe('true');
    expect(await page.locator('.notice').count()).toBe(0);
  });

  it('tells a client id of the wrong length at its field, before leaving for an error page', async () => {
    const other = await context.newPage();
    await other.goto(`${server.issuer}/console/?client_id=oc_tooShort`);
    await other.getByRole('button', { name: 'Sign in' }).click();
    const field = other.getByLabel('Console client id', { exact: true });
    await expect.poll(() => field.getAttribute('aria-invalid'), POLL).toBe('true');
    await other.getByText('a client id is oc_ followed by 20 letters and digits').waitFor();
    expect(new URL(other.url()).pathname).toBe('/console/');
    await other.close();
  });

  it('lists relations by name, and shows the whole of a long list of references as it is typed', async () => {
    await go('namespaces', 'Namespaces');
    const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'document', exact: true }) });
    expect(await row.locator('td').nth(1).textContent()).toBe('blocked; editor ⊇ owner; owner; viewer ⊇ editor');

    const includes = section('Create a namespace').getByLabel('Includes of relation 1', { exact: true });
    await includes.fill('editor, parent->viewer, parent->editor, organisation->member, team->member, workspace->administrator');
    const size = await includes.evaluate((field) => ({
      scrollWidth: field.scrollWidth,
      clientWidth: field.clientWidth,
      scrollHeight: field.scrollHeight,
      clientHeight: field.clientHeight,
    }));
    expect(size.scrollWidth).toBeLessThanOrEqual(size.clientWidth);
    expect(size.scrollHeight).toBeLessThanOrEqual(size.clientHeight);
  });
});
