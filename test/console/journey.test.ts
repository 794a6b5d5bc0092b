import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { newTenant, tenantSnapshot, type TestTenant } from '../helpers.ts';
import { api } from '../oauth/support.ts';
import { launchChromium } from './chromium.ts';
import { useConsoleServer } from './support.ts';
const ARTIFACTS = join(packageRoot(), 'test-artifacts', 'console');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// Access tokens live 20 s, so that the console renews its token (at 10 s) along the journey, which
// takes 30 s or more. With 8 s, renewing at 4 s, a renewal on a machine busy with other test files
// came after the token's end, and the pages' requests meanwhile were 401.
const server = useConsoleServer({ accessTokenTtlSeconds: 20 });
/** expect.poll's options: a condition is waited for as long as a busy machine needs (two cores for several test runs). */
const POLL = { timeout: 15_000 };
let context: BrowserContext;
let userDataDir: string;
let tenant: TestTenant;
let clientId: string;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  tenant = await newTenant(server.services);
  const created = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', {
    name: 'console',
    type: 'public',
    redirect_uris: [`${server.issuer}/console/callback`],
    scopes: ['admin'],
  });
  expect(created.status).toBe(201);
  clientId = String(created.body!.client_id);
  userDataDir = mkdtempSync(join(tmpdir(), 'grantd-console-chromium-'));
  context = await launchChromium(userDataDir);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.issuer });
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

/** Everything the page did wrong: console errors, script errors, failed requests, and 4xx/5xx answers nobody expected. */
function watch(page: Page) {
  const problems: string[] = [];
  let refusals: string[] = [];
  let expectingRefusal = false;
  page.on('console', (message) => {
    // Chromium reports every 4xx answer as a failed resource; those are counted below instead.
    if (message.type() === 'error' && !(expectingRefusal && message.text().startsWith('Failed to load resource'))) {
      problems.push(`console: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => problems.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`));
  page.on('request', (request) => {
    if (!request.url().startsWith(server.issuer)) problems.push(`request elsewhere: ${request.url()}`);
  });
  page.on('response', (response) => {
    if (response.status() < 400) return;
    const what = `${response.status()} ${response.request().method()} ${response.url()}`;
    if (expectingRefusal) refusals.push(what);
    else problems.push(`unexpected ${what}`);
  });
  return {
    problems,
    /** Runs `step`, which must draw a 4xx (or what `allowed` matches) from the server and leave the tenant's data as it was. */
    async refused(step: () => Promise<void>, allowed = /^4\d\d /): Promise<void> {
      const before = await tenantSnapshot(server.services, tenant.id);
      expectingRefusal = true;
      refusals = [];
      try {
        await step();
        await expect.poll(() => refusals.length, POLL).toBeGreaterThan(0);
      } finally {
        expectingRefusal = false;
      }
      expect(
        refusals.every((r) => allowed.test(r)),
        refusals.join(', '),
      ).toBe(true);
      expect(await tenantSnapshot(server.services, tenant.id)).toBe(before);
    },
  };
}

/** The form section under the heading `name`. */
const section = (page: Page, name: string): Locator => page.locator('section').filter({ has: page.getByRole('heading', { name, exact: true }) });

/** The field labelled `label` in `scope` shows the server's problem: marked invalid, its message beneath. */
async function expectFieldProblem(scope: Locator, label: string, text: RegExp): Promise<void> {
  const input = scope.getByLabel(label, { exact: true });
  await expect.poll(() => input.getAttribute('aria-invalid'), POLL).toBe('true');
  const described = (await input.getAttribute('aria-describedby')) ?? '';
  const problemId = described.split(' ').find((id) => id.endsWith('-problem'));
  expect(problemId).toBeDefined();
  expect(await scope.page().locator(`[id="${problemId}"]`).textContent()).toMatch(text);
}

async function go(page: Page, path: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: heading, exact: true }).click();
  await expect.poll(() => page.url(), POLL).toMatch(new RegExp(`#/${path}$`));
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await page.waitForLoadState('networkidle');
  await expect.poll(() => page.locator('.loading').count(), POLL).toBe(0);
}

/** axe-core inside the page (evaluated through the DevTools protocol, which the page's CSP does not govern). */
async function expectAccessible(page: Page, where: string): Promise<void> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const result = await (
      window as unknown as {
        axe: { run: (options: object) => Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe.run({
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious, `${where}: ${JSON.stringify(serious, null, 2)}`).toEqual([]);
}

const shoot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

describe('the console in headless Chromium', () => {
  it('walks an admin through sign-in, namespaces, grants, checks, agents, keys and clients, showing each refusal at its field', async () => {
    const page = await context.newPage();
    const watched = watch(page);
    const { problems } = watched;
    const refused = (step: () => Promise<void>, allowed?: RegExp) => watched.refused(step, allowed);
    // The changes feed's requests, to prove that the tail stops when its page is left.
    let feedRequests = 0;
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/changes') feedRequests++;
    });
    // The tokens the console was given, to prove below that signing out ended them.
    const tokens: { access_token: string; refresh_token: string }[] = [];
    page.on('response', async (response) => {
      if (response.url().endsWith('/v1/oauth/token') && response.ok()) tokens.push(await response.json());
    });

    // Sign in: the console's page, the consent page with an admin key, back with a session.
    await page.goto(`${server.issuer}/console/?client_id=${clientId}`);
    await expect.poll(() => page.getByLabel('Console client id').inputValue(), POLL).toBe(clientId);
    await expectAccessible(page, 'sign-in');
    await shoot(page, 'sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/v1\/oauth\/consent\//);
    await page.fill('#api_key', tenant.adminKey);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(new URL(page.url()).search).toBe(''); // the code left the address bar
    await expect.poll(() => page.locator('.cards li').count(), POLL).toBe(4);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toMatch(/svc_(at|rt|live)_/);
    await expectAccessible(page, 'overview');
    await shoot(page, 'overview');

    // Namespaces: the editor checks includes as the server does; a bad name is the server's problem at the field.
    await go(page, 'namespaces', 'Namespaces');
    const create = section(page, 'Create a namespace');
    await create.getByRole('button', { name: 'Add a relation' }).click();
    await create.getByLabel('Relation 2', { exact: true }).fill('editor');
    await create.getByLabel('Includes of relation 2', { exact: true }).fill('nope');
    await expect.poll(() => create.textContent(), POLL).toContain('relation editor includes "nope", but nope is not declared');
    await refused(async () => {
      await create.getByLabel('Name', { exact: true }).fill('Bad Name');
      await create.getByRole('button', { name: 'Create namespace' }).click();
      await expectFieldProblem(create, 'Name', /must match/);
    });
    await create.getByLabel('Includes of relation 2', { exact: true }).fill('owner');
    await create.getByRole('button', { name: 'Add a relation' }).click();
    await create.getByLabel('Relation 3', { exact: true }).fill('viewer');
    await create.getByLabel('Includes of relation 3', { exact: true }).fill('editor');
    // Requires and excludes are checked as includes are, and left empty they are not sent.
    await create.getByLabel('Excludes of relation 3', { exact: true }).fill('blocked');
    await expect.poll(() => create.textContent(), POLL).toContain('relation viewer excludes "blocked", but blocked is not declared');
    await create.getByLabel('Excludes of relation 3', { exact: true }).fill('');
    await create.getByLabel('Requires of relation 3', { exact: true }).fill('editor, owner');
    await expect.poll(() => create.locator('pre.preview').textContent(), POLL).toContain('"requires"');
    await create.getByLabel('Requires of relation 3', { exact: true }).fill('');
    await create.getByLabel('Name', { exact: true }).fill('document');
    // The server's problem was about the value sent; once the field is edited, it is gone.
    expect(await create.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBeNull();
    expect(JSON.parse((await create.locator('pre.preview').textContent())!)).toEqual({
      name: 'document',
      relations: { owner: {}, editor: { includes: ['owner'] }, viewer: { includes: ['editor'] } },
    });
    await shoot(page, 'namespaces-form');
    await create.getByRole('button', { name: 'Create namespace' }).click();
    await page.getByText('Namespace document created.').waitFor();
    await page.getByRole('cell', { name: 'document', exact: true }).waitFor();
    await expectAccessible(page, 'namespaces');
    await shoot(page, 'namespaces');

    // Agents: a bad id is refused at its field; then release-bot is registered.
    await go(page, 'agents', 'Agents');
    const register = section(page, 'Register an agent');
    await refused(async () => {
      await register.getByLabel('External id', { exact: true }).fill('..');
      await register.getByRole('button', { name: 'Register agent' }).click();
      await expectFieldProblem(register, 'External id', /must be 1-256 characters/);
    });
    await register.getByLabel('External id', { exact: true }).fill('release-bot');
    await register.getByLabel('Scope', { exact: true }).fill('document:viewer');
    await register.getByRole('button', { name: 'Register agent' }).click();
    await page.getByText('Agent release-bot registered.').waitFor();
    await page.getByRole('cell', { name: 'agent:release-bot' }).waitFor();

    // Grants: a bad subject is refused at its field; two grants created, a file imported, a filter, a revocation.
    await go(page, 'grants', 'Grants');
    await page.getByText('No grants yet').waitFor();
    const add = section(page, 'Create a grant');
    const grant = async (subject: string, relation: string, object: string) => {
      await add.getByLabel('Subject', { exact: true }).fill(subject);
      await add.getByLabel('Relation', { exact: true }).fill(relation);
      await add.getByLabel('Object', { exact: true }).fill(object);
      await add.getByRole('button', { name: 'Create grant' }).click();
    };
    await refused(async () => {
      await grant('alice', 'owner', 'document:q3');
      await expectFieldProblem(add, 'Subject', /namespace>:<id>|must be/);
    });
    await refused(async () => {
      await grant('user:alice', 'reader', 'document:q3');
      await expectFieldProblem(add, 'Relation', /reader/);
    });
    await grant('user:alice', 'owner', 'document:q3');
    await page.getByText('Created grant user:alice owner on document:q3.').waitFor();
    await grant('agent:release-bot', 'viewer', 'document:q3');
    await page.getByText('Created grant agent:release-bot viewer on document:q3.').waitFor();
    // A window: an expiry in the past, or before the start, is the server's problem at the expiry field.
    const notBefore = add.getByLabel('In force from (optional)', { exact: true });
    const expiresAt = add.getByLabel('Expires at (optional)', { exact: true });
    await refused(async () => {
      await expiresAt.fill('2020-01-01T00:00');
      await grant('user:dave', 'viewer', 'document:q3');
      await expectFieldProblem(add, 'Expires at (optional)', /must be in the future/);
    });
    await refused(async () => {
      await notBefore.fill('2099-06-01T00:00');
      await expiresAt.fill('2099-01-01T00:00');
      await grant('user:dave', 'viewer', 'document:q3');
      await expectFieldProblem(add, 'Expires at (optional)', /must be after not_before/);
    });
    await notBefore.fill('2099-01-01T00:00');
    await expiresAt.fill('2099-06-01T00:00');
    await grant('user:dave', 'viewer', 'document:q3');
    await page.getByText(/^Created grant user:dave viewer on document:q3 from .*2099.* until .*2099.*\.$/).waitFor();
    const daves = await api(server.issuer, tenant.adminKey, 'GET', '/v1/grants?subject=user:dave');
    expect(daves.body!.grants).toMatchObject([
      { not_before: new Date('2099-01-01T00:00').toISOString(), expires_at: new Date('2099-06-01T00:00').toISOString() },
    ]);
    expect(await notBefore.inputValue()).toBe('');

    const importer = section(page, 'Import grants');
    const file = importer.getByLabel(/NDJSON file/);
    await file.setInputFiles({
      name: 'bad.ndjson',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from('{"subject":"user:bob","relation":"viewer","object":"document:q3"}\nnot json\n'),
    });
    await importer.getByText('1 line is not a grant; nothing was imported.').waitFor();
    const lines = [
      { subject: 'user:bob', relation: 'viewer', object: 'document:q3' },
      { subject: 'user:carol', relation: 'editor', object: 'document:q4' },
      { subject: 'user:alice', relation: 'owner', object: 'document:q3' },
    ];
    await file.setInputFiles({
      name: 'grants.ndjson',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')),
    });
    await importer.getByRole('button', { name: 'Import 3 grants from grants.ndjson' }).click();
    await importer.getByText('Import finished: 2 new, 1 already present.').waitFor();
    expect(await importer.getByRole('progressbar').getAttribute('value')).toBe('3');
    await shoot(page, 'grants-import');

    const list = section(page, 'Current grants');
    await list.getByLabel('Subject', { exact: true }).fill('user:bob');
    await list.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => list.locator('tbody tr').count(), POLL).toBe(1);
    await refused(async () => {
      await list.getByLabel("Object's namespace", { exact: true }).fill('Bad');
      await list.getByRole('button', { name: 'Filter' }).click();
      await expectFieldProblem(list, "Object's namespace", /must match/);
    });
    await list.getByLabel("Object's namespace", { exact: true }).fill('');
    await list.getByRole('button', { name: 'Revoke user:bob viewer document:q3' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke grant' }).click();
    await page.getByText('Revoked user:bob viewer document:q3.').waitFor();
    await expect.poll(() => list.getByText('No grant matches these filters.').count(), POLL).toBe(1);
    await list.getByLabel('Subject', { exact: true }).fill('');
    await list.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => list.locator('tbody tr').count(), POLL).toBe(4);
    expect(await list.getByRole('row', { name: /user:dave/ }).textContent()).toMatch(/2099.*2099/);
    await expectAccessible(page, 'grants');
    await shoot(page, 'grants');

    // Check: alice views q3 through owner -> editor -> viewer; a bad object is refused at its field.
    await go(page, 'check', 'Check');
    const ask = async (subject: string, relation: string, object: string) => {
      await page.getByLabel('Subject', { exact: true }).fill(subject);
      await page.getByLabel('Relation', { exact: true }).fill(relation);
      await page.getByLabel('Object', { exact: true }).fill(object);
      await page.getByRole('button', { name: 'Check', exact: true }).click();
    };
    const why = section(page, 'Why');
    const steps = why.getByRole('list', { name: 'The explain path, step by step' });
    await ask('user:alice', 'viewer', 'document:q3');
    await page.locator('.answer.allowed').waitFor();
    await expect
      .poll(() => steps.locator('li').allTextContents(), POLL)
      .toEqual(['user:alice holds owner on document:q3 (owner is included by the relation asked)']);
    const graph = why.getByRole('img', { name: /explain path as a graph: 1 grant from user:alice to document:q3/ });
    expect(await graph.locator('.node').allTextContents()).toEqual(['user:alice', 'document:q3']);
    expect(await graph.locator('.edge text').allTextContents()).toEqual(['owner (includes:owner)']);
    await ask('user:carol', 'viewer', 'document:q3');
    await page.locator('.answer.denied').waitFor();
    await why.getByText(/no-path/).waitFor();
    await ask('user:dave', 'viewer', 'document:q3');
    await why.getByText(/not-yet-valid/).waitFor();
    await shoot(page, 'check-denied');
    await refused(async () => {
      await ask('user:alice', 'viewer', 'q3');
      await expectFieldProblem(page.locator('main'), 'Object', /namespace>:<id>|must be/);
    });
    // Who can access: a page of 20 subjects, then the rest; another namespace; an empty one.
    const readers = Array.from({ length: 24 }, (_, i) => `user:reader${String(i).padStart(2, '0')}`);
    const batch = await api(server.issuer, tenant.adminKey, 'POST', '/v1/grants/batch', {
      writes: readers.map((subject) => ({ subject, relation: 'viewer', object: 'document:q3' })),
    });
    expect(batch.status).toBe(200);
    await ask('user:alice', 'viewer', 'document:q3');
    await page.locator('.answer.allowed').waitFor();
    const who = section(page, 'Who holds viewer on document:q3');
    const subjects = who.getByRole('list', { name: 'Subjects of namespace user' });
    await expect.poll(() => subjects.locator('li').allTextContents(), POLL).toEqual(['user:alice', ...readers.slice(0, 19)]);
    await expectAccessible(page, 'check');
    await shoot(page, 'check');
    await who.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(() => subjects.locator('li').allTextContents(), POLL).toEqual(readers.slice(19));
    expect(await who.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await who.getByRole('button', { name: 'Previous page' }).click();
    await expect.poll(() => subjects.locator('li').count(), POLL).toBe(20);
    await who.getByLabel('Subject namespace').selectOption('agent');
    await expect
      .poll(() => who.getByRole('list', { name: 'Subjects of namespace agent' }).locator('li').allTextContents(), POLL)
      .toEqual(['agent:release-bot']);
    await who.getByLabel('Subject namespace').selectOption('document');
    await who.getByText(/No subject of namespace document holds it/).waitFor();

    // The killswitch: the dialog says what goes, then how much went.
    await go(page, 'agents', 'Agents');
    await page.getByRole('button', { name: 'Kill agent release-bot' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Grants of agent:release-bot: 1').waitFor();
    await dialog.getByText('viewer on document:q3').waitFor();
    await expectAccessible(page, 'killswitch dialog');
    await shoot(page, 'agents-killswitch');
    await dialog.getByRole('button', { name: 'Kill agent' }).click();
    await page.getByText('Agent release-bot killed: 1 grant removed, 0 OAuth clients removed.').waitFor();
    await page.getByText('No agents registered').waitFor();
    await shoot(page, 'agents');

    // Keys: no scope is refused at the scopes; a key is made, its secret shown once and copied, then revoked.
    await go(page, 'keys', 'API keys');
    const createKey = section(page, 'Create a key');
    await refused(async () => {
      await createKey.getByLabel('check:read').uncheck();
      await createKey.getByRole('button', { name: 'Create key' }).click();
      await createKey.locator('fieldset .problem').waitFor();
      expect(await createKey.locator('fieldset .problem').textContent()).toMatch(/Invalid request/);
    });
    await createKey.getByLabel('grant:read').check();
    await createKey.getByLabel('Label', { exact: true }).fill('ci');
    await createKey.getByRole('button', { name: 'Create key' }).click();
    const secret = createKey.getByLabel(/Its secret/);
    await secret.waitFor();
    const value = await secret.inputValue();
    expect(value).toMatch(/^svc_live_/);
    await createKey.getByRole('button', { name: 'Copy' }).click();
    await createKey.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(value);
    await expectAccessible(page, 'keys');
    await shoot(page, 'keys');
    await page.getByRole('button', { name: 'Revoke key ci' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText(/^Key key_\w+ revoked\.$/).waitFor();
    expect((await api(server.issuer, value, 'GET', '/v1/grants')).status).toBe(401);

    // OAuth clients: a public client without a redirect URI is refused at that field.
    await go(page, 'clients', 'OAuth clients');
    const createClient = section(page, 'Create a client');
    await refused(async () => {
      await createClient.getByLabel('Name (shown on the consent page)').fill('spa');
      await createClient.getByLabel('Type').selectOption('public');
      await createClient.getByRole('button', { name: 'Create client' }).click();
      await expectFieldProblem(createClient, 'Redirect URIs', /needs a redirect URI/);
    });
    await page.getByRole('cell', { name: clientId }).waitFor();
    await expectAccessible(page, 'clients');
    await shoot(page, 'clients');

    // Changes: the journey's writes, newest first, each with its actor (the console's client, for the admin key that signed in).
    await go(page, 'changes', 'Changes');
    const feed = page.getByRole('table');
    /** The rows of that kind and op (exact cells) whose text has each of `texts`. */
    const change = (kind: string, op: string, ...texts: (string | RegExp)[]) =>
      texts.reduce(
        (rows: Locator, text) => rows.filter({ hasText: text }),
        feed
          .getByRole('row')
          .filter({ has: page.getByRole('cell', { name: kind, exact: true }) })
          .filter({ has: page.getByRole('cell', { name: op, exact: true }) }),
      );
    const byConsole = new RegExp(`client ${clientId} for key_`);
    await change('grant', 'create', 'user:alice owner document:q3', byConsole).waitFor();
    await change('grant', 'create', /user:dave viewer document:q3 from .*2099.* until .*2099/, byConsole).waitFor();
    await change('grant', 'delete', 'user:bob viewer document:q3', byConsole).waitFor();
    await change('agent', 'delete', 'agent:release-bot', byConsole).waitFor();
    await change('grant', 'delete', 'agent:release-bot viewer document:q3', byConsole).waitFor();
    await change('key', 'delete', /key_\w+ \(ci\)/, byConsole).waitFor();
    // The batch of readers was written with the admin key itself.
    await change('grant', 'create', 'user:reader00 viewer document:q3', /^(?!.*client).*key key_\w+$/).waitFor();
    const newest = await feed.locator('tbody tr').first().textContent();
    expect(newest).toMatch(/key.*delete/); // the key's revocation was the last write
    await expectAccessible(page, 'changes');
    await shoot(page, 'changes');

    // Paused, nothing is fetched; resumed, the tail goes on from the last change shown, and a new change is announced.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await page.waitForLoadState('networkidle');
    const pausedAt = feedRequests;
    const erin = { subject: 'user:erin', relation: 'viewer', object: 'document:q3' };
    expect((await api(server.issuer, tenant.adminKey, 'POST', '/v1/grants', erin)).status).toBe(201);
    await page.waitForTimeout(2_500);
    expect(feedRequests).toBe(pausedAt);
    expect(await feed.getByRole('row').filter({ hasText: 'user:erin' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Resume' }).press('Enter');
    await change('grant', 'create', 'user:erin viewer document:q3').waitFor();
    await expect
      .poll(
        () =>
          page
            .getByRole('status')
            .filter({ hasText: /new change/ })
            .textContent(),
        POLL,
      )
      .toBe('1 new change');
    expect((await api(server.issuer, tenant.adminKey, 'DELETE', '/v1/grants', erin)).status).toBe(204);
    await change('grant', 'delete', 'user:erin viewer document:q3').waitFor();
    // The kind filter.
    await page.getByLabel('Kind', { exact: true }).selectOption('key');
    await expect.poll(() => feed.locator('tbody tr td:nth-child(3)').allTextContents(), POLL).toEqual(['key', 'key', 'key']); // the first key, ci's create and revoke
    await page.getByLabel('Kind', { exact: true }).selectOption('');

    // The feed's problems, what to do about them, and the way on.
    const isFeed = (url: URL) => url.pathname === '/v1/changes';
    await refused(async () => {
      await page.route(isFeed, (route) =>
        route.fulfill({
          status: 503,
          headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
          body: JSON.stringify({ type: 'unavailable', title: 'Service unavailable', status: 503, detail: 'the database cannot answer now' }),
        }),
      );
      await page.getByText('Service unavailable: the database cannot answer now').waitFor();
      await page.getByText(/Nothing is lost: trying again goes on from the last change shown/).waitFor();
    }, /^503 /);
    await page.unroute(isFeed);
    await shoot(page, 'changes-unavailable');
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    await refused(async () => {
      await page.route(isFeed, (route) =>
        route.fulfill({
          status: 410,
          headers: { 'content-type': 'application/problem+json' },
          body: JSON.stringify({
            type: 'changes-expired',
            title: 'Changes expired',
            status: 410,
            detail: 'the changes after this revision are no longer kept',
          }),
        }),
      );
      await page.getByText('Changes expired: the changes after this revision are no longer kept').waitFor();
    });
    await page.unroute(isFeed);
    await page.getByRole('button', { name: 'Start again from the oldest kept' }).click();
    await change('grant', 'delete', 'user:erin viewer document:q3').waitFor();
    expect(await feed.locator('tbody tr').count()).toBe(
      new Set(await feed.locator('tbody tr td:first-child code').evaluateAll((c) => c.map((e) => e.getAttribute('title')))).size,
    );

    // Leaving the page stops the tail: no request after.
    await go(page, 'clients', 'OAuth clients');
    const leftAt = feedRequests;
    await page.waitForTimeout(2_500);
    expect(feedRequests).toBe(leftAt);

    // The same pages at a phone's width.
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [path, heading] of [
      ['', 'Overview'],
      ['grants', 'Grants'],
      ['namespaces', 'Namespaces'],
      ['changes', 'Changes'],
    ] as const) {
      await go(page, path, heading);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, `${heading} is wider than the screen`).toBeLessThanOrEqual(0);
      await shoot(page, `${path || 'overview'}-390`);
    }
    await expectAccessible(page, 'namespaces at 390 px');
    // The explain graph shrinks to a phone's width.
    await go(page, 'check', 'Check');
    await ask('user:alice', 'viewer', 'document:q3');
    await page.locator('.answer.allowed').waitFor();
    await section(page, 'Who holds viewer on document:q3').getByRole('list').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
    expect((await why.getByRole('img').boundingBox())!.width).toBeLessThanOrEqual(390);
    await shoot(page, 'check-390');

    // Sign-out revokes the session's grant: its refresh token no longer works. Signing out from the
    // Changes page stops its tail first: no request with the revoked token, none after.
    await go(page, 'changes', 'Changes');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    const signedOutAt = feedRequests;
    await page.waitForTimeout(2_500);
    expect(feedRequests).toBe(signedOutAt);
    await shoot(page, 'signed-out');
    expect(tokens.length).toBeGreaterThan(1); // renewed along the way, each time with the latest refresh token
    const last = tokens[tokens.length - 1]!;
    expect((await api(server.issuer, last.access_token, 'GET', '/v1/namespaces')).status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  }, 200_000);
});
