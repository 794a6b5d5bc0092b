import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_CSP } from '../../src/http/docs.ts';
import { packageRoot } from '../../src/package-root.ts';
import { listen, useApp } from '../helpers.ts';
import { loadDocument, operationsOf } from './support.ts';

/** Debian's chromium; CI installs it (apt-get install -y chromium). */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOT = join(packageRoot(), 'test-artifacts', 'docs.png');

const { app } = useApp();

describe('GET /docs', () => {
  it('serves the reference page, unauthenticated, with its own Content-Security-Policy and no external URL', async () => {
    for (const path of ['/docs', '/docs/', '/docs/index.html']) {
      const res = await supertest(app).get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toBe(DOCS_CSP);
      expect(res.text).toContain('swagger-ui-bundle.js');
      expect(res.text).toContain('swagger-initializer.js');
      expect(res.text).toMatch(/data-openapi-url="(\.\.\/)?openapi\.json"/);
      expect(res.text).not.toMatch(/https?:\/\//);
      expect(res.text).not.toMatch(/<script>|<script [^>]*>[^<\s]/); // no inline script
    }
    const csp = DOCS_CSP;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
  });

  it('serves the Swagger UI assets from swagger-ui-dist, and the initializer pointing at /openapi.json', async () => {
    const bundle = await supertest(app).get('/docs/swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers['content-type']).toMatch(/javascript/);
    const css = await supertest(app).get('/docs/swagger-ui.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    const init = await supertest(app).get('/docs/swagger-initializer.js');
    expect(init.status).toBe(200);
    expect(init.headers['content-type']).toMatch(/javascript/);
    expect(init.text).toContain('data-openapi-url');
    expect(init.text).not.toContain('petstore');
    expect(init.text).toContain('validatorUrl: null');
  });

  it('serves nothing else of swagger-ui-dist, however the path is spelled', async () => {
    const paths = [
      '/docs/package.json',
      '/docs/index.js',
      '/docs/nothing.js',
      '/docs/oauth2-redirect.html',
      '/docs//package.json',
      '/docs/./package.json',
      '/docs/%2e/package.json',
      '/docs/x/../package.json',
      // Swagger UI's own index page and initializer, which open the Petstore example.
      '/docs/./index.html',
      '/docs//index.html',
      '/docs//swagger-initializer.js',
      '/docs/./swagger-ui.css',
    ];
    for (const path of paths) {
      const res = await supertest(app).get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/^application\/problem\+json/);
      expect(res.body.type, path).toBe('not-found');
    }
  });
});

describe('the reference in headless Chromium', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  let userDataDir: string;

  beforeAll(async () => {
    server = await listen(app);
    userDataDir = mkdtempSync(join(tmpdir(), 'grantd-chromium-'));
  });

  afterAll(async () => {
    await server?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it('renders every operation of the document, offline, without a CSP violation or a script error', async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: this test needs Debian's chromium (apt-get install -y chromium)`);
    }
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      headless: true,
      viewport: { width: 1280, height: 900 },
      offline: false,
    });
    const problems: string[] = [];
    const elsewhere: string[] = [];
    try {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) => {
        if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith('data:')) elsewhere.push(request.url());
      });
      page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));

      const response = await page.goto(`${server.baseUrl}/docs`, { waitUntil: 'load' });
      expect(response?.status()).toBe(200);
      await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
      await page.waitForLoadState('networkidle');

      await expect.poll(() => page.locator('.info .title').first().textContent()).toContain('grantd');
      const rendered = await page.$$eval('.opblock', (blocks) =>
        blocks.map((block) => {
          const method = block.querySelector('.opblock-summary-method')?.textContent ?? '';
          const pathElement = block.querySelector('.opblock-summary-path');
          const path = pathElement?.getAttribute('data-path') ?? pathElement?.textContent ?? '';
          return `${method.toLowerCase()} ${path.replace(/\u200b/g, '')}`;
        }),
      );
      const documented = operationsOf(loadDocument()).map((o) => `${o.method} ${o.path}`);
      expect(rendered.sort()).toEqual(documented.sort());
      const bodyText = (await page.textContent('body')) ?? '';
      for (const path of [
        '/v1/check',
        '/v1/check/bulk',
        '/v1/objects',
        '/v1/grants',
        '/v1/namespaces',
        '/v1/agents/{external_id}',
        '/v1/keys/{id}',
      ]) {
        expect(bodyText.replace(/\u200b/g, '')).toContain(path);
      }

      mkdirSync(join(packageRoot(), 'test-artifacts'), { recursive: true });
      const shot = `${SCREENSHOT}.${process.pid}.${Date.now()}.png`;
      await page.screenshot({ path: shot, fullPage: true });
      renameSync(shot, SCREENSHOT); // atomic: both database projects may take it at once

      // Open POST /v1/check: its scope, request example and problem responses are shown.
      await page.locator('#operations-Check-check .opblock-summary').click();
      await page.waitForSelector('#operations-Check-check .responses-wrapper', { timeout: 10_000 });
      const checkText = (await page.locator('#operations-Check-check').textContent()) ?? '';
      expect(checkText).toContain('check:read');
      expect(checkText).toContain('application/problem+json');
      expect(checkText).toContain('document:q3');
      // Placeholders in descriptions survive Markdown (they are code spans, not HTML tags).
      await page.locator('#operations-Objects-objectsList .opblock-summary').click();
      await page.waitForSelector('#operations-Objects-objectsList .parameters', { timeout: 10_000 });
      expect(await page.locator('#operations-Objects-objectsList .parameters').textContent()).toContain('<namespace>:<id>');
    } finally {
      await context.close();
    }
    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
    expect(existsSync(SCREENSHOT)).toBe(true);
  }, 90_000);
});
