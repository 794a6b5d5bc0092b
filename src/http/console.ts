import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exactRouter } from './options.ts';
import { type NextFunction, type Request, type Response, type Router } from 'express';
import { packageRoot } from '../package-root.ts';
import { documentSecurityHeaders } from './middleware/security-headers.ts';
import { sendProblem } from './problem.ts';

/** Where `npm run build` puts the console's files (scripts/build-console.ts). */
export const CONSOLE_DIR = join(packageRoot(), 'dist', 'console');
export const MANIFEST = 'manifest.json';

/** What the build made: the entry script and stylesheet the page loads, and every file it may fetch (chunks, source maps). */
export interface ConsoleManifest {
  script: string;
  style: string;
  files: string[];
}

/**
 * The console's policy: its own script and stylesheet only (no inline script or style), requests
 * to this origin only (the /v1 API and the token endpoint), no framing, no base or plugin.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The console's pages: the app at /console/ and the OAuth redirect URI /console/callback. */
export const CONSOLE_PAGES = ['/console/', '/console/callback'];

function readManifest(dir: string): ConsoleManifest | null {
  const file = join(dir, MANIFEST);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ConsoleManifest) : null;
}

// Asset URLs are relative: both pages sit in /console/, and grantd may be mounted under a path prefix.
const page = (manifest: ConsoleManifest): string => `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>grantd console</title>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="assets/${manifest.style}">
    <script type="module" src="assets/${manifest.script}"></script>
  </head>
  <body>
    <noscript>The grantd console needs JavaScript.</noscript>
    <div id="app"></div>
  </body>
</html>
`;

/**
 * GET /console/: the console, a browser app for a tenant's admins (docs/console.md). The page is
 * never cached; its assets carry a content hash in their names, so they are cached for a year.
 * Before `npm run build` made them, the page is a 503 problem that says so.
 */
export function consoleRouter(dir: string = CONSOLE_DIR): Router {
  const router = exactRouter();
  const manifest = readManifest(dir);
  const html = manifest ? page(manifest) : null;
  const assets = new Set(manifest?.files ?? []);

  router.use('/console', documentSecurityHeaders, (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    next();
  });
  // Only the exact path: the router is strict, /console/ is a page of its own.
  router.get('/console', (_req, res) => res.redirect(308, 'console/'));
  // One route each, so that metrics label each page by its own path.
  for (const path of CONSOLE_PAGES) router.get(path, (_req, res) => serve(res));

  function serve(res: Response) {
    if (!html) return sendProblem(res, 'unavailable', 'the console is not built: run npm run build');
    res.status(200).type('html').setHeader('Cache-Control', 'no-cache').send(html);
  }

  // Each file by its name in the manifest, never a static folder (no path reaches anything else).
  router.get('/console/assets/:file', (req, res, next) => {
    const file = String(req.params.file);
    if (!assets.has(file)) return next();
    // Set here: send() keeps the no-store every answer starts with (apiSecurityHeaders).
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.sendFile(file, { root: dir, cacheControl: false });
  });
  return router;
}
