import type { Response } from 'express';
import type { z } from 'zod';
import type { OAuthErrorSchema } from '../../../contract/index.ts';
import { PAGE_CSP } from '../../auth/oauth/pages.ts';

type OAuthError = z.infer<typeof OAuthErrorSchema>;

/** An HTML page for the browser (the consent page, an error page), under the pages' policy, never cached. */
export function sendPage(res: Response, status: number, html: string): void {
  res.setHeader('Content-Security-Policy', PAGE_CSP);
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).type('html').send(html);
}

/** An error in RFC 6749's shape, with its WWW-Authenticate challenge when there is one. */
export function sendOAuthError(res: Response, status: number, body: OAuthError, challenge?: string): void {
  if (challenge) res.setHeader('WWW-Authenticate', challenge);
  res.status(status).json(body);
}
