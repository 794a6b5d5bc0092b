import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { exactRouter } from './options.ts';
import { type NextFunction, type Request, type Response, type Router } from 'express';
import { documentSecurityHeaders } from './middleware/security-headers.ts';

/** Swagger UI's prebuilt assets, from the swagger-ui-dist package: no CDN, works offline. */
const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * The policy of the reference's responses, replacing helmet's default one: scripts only from this
 * origin (so the initializer is a file, not an inline script), Swagger UI's inline styles and data:
 * images, requests ("Try it out", the document) only to this origin; and no
 * `upgrade-insecure-requests`, which would break the page on a plain-http address that is not localhost.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ');

// Starts Swagger UI on the document whose URL the page carries (relative, so that the reference
// also works behind a proxy that mounts grantd under a path prefix).
const INITIALIZER = `window.addEventListener('load', function () {
  var root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: new URL(root.getAttribute('data-openapi-url'), window.location.href).href,
    domNode: root,
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    displayRequestDuration: true,
    persistAuthorization: false,
    tryItOutEnabled: false,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'BaseLayout'
  });
});
`;

/** The files of swagger-ui-dist the page loads (others, such as its petstore index.html, are not served). */
const ASSETS = new Set([
  'swagger-ui.css',
  'swagger-ui.css.map',
  'swagger-ui-bundle.js',
  'swagger-ui-bundle.js.map',
  'favicon-16x16.png',
  'favicon-32x32.png',
]);

/** The page; `base` leads from the requested URL to the folder holding the assets. */
const page = (base: string, openapiUrl: string): string => `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>grantd API reference</title>
    <link rel="stylesheet" href="${base}swagger-ui.css">
    <link rel="icon" type="image/png" href="${base}favicon-32x32.png" sizes="32x32">
  </head>
  <body>
    <noscript>The reference needs JavaScript; the document itself is at <a href="${openapiUrl}">${openapiUrl}</a>.</noscript>
    <div id="swagger-ui" data-openapi-url="${openapiUrl}"></div>
    <script src="${base}swagger-ui-bundle.js" charset="utf-8"></script>
    <script src="${base}swagger-initializer.js" charset="utf-8"></script>
  </body>
</html>
`;

/** GET /docs: a browsable reference of GET /openapi.json, with Swagger UI's assets under /docs/. */
export function docsRouter(): Router {
  const router = exactRouter();
  const withPolicy = (_req: Request, res: Response, next: () => void) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    next();
  };
  router.use('/docs', documentSecurityHeaders, withPolicy);
  router.get(['/docs', '/docs/', '/docs/index.html'], (req: Request, res: Response) => {
    // "/docs" reaches the assets at docs/..., "/docs/" and "/docs/index.html" at ./...
    const inFolder = /\/docs\/(index\.html)?$/.test(req.originalUrl.split('?')[0]!);
    res
      .status(200)
      .type('html')
      .setHeader('Cache-Control', 'no-cache')
      .send(inFolder ? page('./', '../openapi.json') : page('docs/', 'openapi.json'));
  });
  router.get('/docs/swagger-initializer.js', (_req: Request, res: Response) => {
    res.status(200).type('text/javascript').setHeader('Cache-Control', 'no-cache').send(INITIALIZER);
  });
  // Each asset by its name alone, never a static folder: a static handler normalises paths such as
  // /docs//package.json or /docs/./index.html (Swagger UI's Petstore page) past any allow-list.
  router.get('/docs/:asset', (req: Request, res: Response, next: NextFunction) => {
    const asset = String(req.params.asset);
    if (!ASSETS.has(asset)) return next();
    res.sendFile(asset, { root: SWAGGER_UI_DIR, maxAge: '1h' });
  });
  return router;
}
