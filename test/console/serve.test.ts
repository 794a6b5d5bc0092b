import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../scripts/build-console.ts';
import { createApp } from '../../src/http/app.ts';
import { CONSOLE_CSP, type ConsoleManifest } from '../../src/http/console.ts';
import { DEFAULT_HTTP_OPTIONS } from '../../src/http/options.ts';
import { useServices } from '../helpers.ts';

const services = useServices();
const dir = mkdtempSync(join(tmpdir(), 'grantd-console-serve-'));
let manifest: ConsoleManifest;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  manifest = await buildConsole(dir);
  app = createApp(services, { ...DEFAULT_HTTP_OPTIONS, consoleDir: dir });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('GET /console', () => {
  it('redirects /console to /console/, relatively, so that a path prefix is kept', async () => {
    const res = await supertest(app).get('/console');
    expect(res.status).toBe(308);
    expect(res.headers.location).toBe('console/');
  });

  it('serves the page at /console/ and /console/callback: no-cache, its own policy, fingerprinted assets, no inline script or style', async () => {
    for (const path of ['/console/', '/console/callback', '/console/callback?code=x&state=y']) {
      const res = await supertest(app).get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(res.text).toContain(`<script type="module" src="assets/${manifest.script}"></script>`);
      expect(res.text).toContain(`<link rel="stylesheet" href="assets/${manifest.style}">`);
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|https?:\/\//);
    }
    expect(manifest.script).toMatch(/^main-[A-Z0-9]{8}\.js$/);
    expect(manifest.style).toMatch(/^main-[A-Z0-9]{8}\.css$/);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
  });

  it("serves the manifest's files for a year, immutable, and nothing else however the path is spelled", async () => {
    const script = await supertest(app).get(`/console/assets/${manifest.script}`);
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const style = await supertest(app).get(`/console/assets/${manifest.style}`);
    expect(style.status).toBe(200);
    expect(style.headers['content-type']).toMatch(/^text\/css/);
    for (const path of [
      '/console/assets/manifest.json',
      '/console/assets/nothing.js',
      '/console/assets/..%2Fmanifest.json',
      '/console/assets/%2e%2e/manifest.json',
      `/console/assets//${manifest.script}`,
      '/console/manifest.json',
      '/console/index.html',
    ]) {
      const res = await supertest(app).get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/^application\/problem\+json/);
    }
  });

  it('answers 503 with a problem saying so before the console is built', async () => {
    const unbuilt = createApp(services, { ...DEFAULT_HTTP_OPTIONS, consoleDir: join(dir, 'missing') });
    const res = await supertest(unbuilt).get('/console/');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ type: 'unavailable', detail: 'the console is not built: run npm run build' });
  });
});
