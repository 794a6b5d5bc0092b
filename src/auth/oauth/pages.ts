import { hash } from 'node:crypto';

/** What each scope lets the client do, as the consent page names it. */
const SCOPE_MEANINGS: Record<string, string> = {
  'check:read': 'ask whether subjects hold relations, and list objects (check:read)',
  'grant:read': 'read grants, namespaces and agents (grant:read)',
  'grant:write': 'write and remove grants, namespaces and agents (grant:write)',
  admin: 'everything, including API keys and OAuth clients (admin)',
};

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#111}' +
  'h1{font-size:1.4rem}li{margin:.3rem 0}label,input{display:block;width:100%;box-sizing:border-box}' +
  'input{padding:.5rem;margin:.3rem 0 1rem;font-family:monospace}button{padding:.5rem 1rem;margin-right:.5rem}.error{color:#a00}';
const STYLE_HASH = `'sha256-${hash('sha256', STYLE, 'base64')}'`;

/**
 * The pages' Content-Security-Policy: nothing loads but the one inline style, no framing. No
 * `form-action`: browsers apply it to the redirects that follow the form too, and the last one
 * goes to the client's redirect_uri.
 */
export const PAGE_CSP = `default-src 'none'; style-src ${STYLE_HASH}; frame-ancestors 'none'; base-uri 'none'`;

/** The form_post page's one script, after its form: it sends the form as soon as the page is read. */
const SUBMIT_SCRIPT = 'document.forms[0].submit()';

/** The form_post page's policy: the pages' own, and exactly its one script (by its hash) may run. */
export const FORM_POST_CSP = `${PAGE_CSP}; script-src 'sha256-${hash('sha256', SUBMIT_SCRIPT, 'base64')}'`;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`
  );
}

export interface ConsentView {
  action: string;
  clientName: string;
  clientId: string;
  /** The client's tenant: the one whose API key signs in here (null: a client that registered itself, not bound yet). */
  tenantName: string | null;
  scopes: string[];
  csrf: string;
  /** For a client that registered itself (RFC 7591): where it sends the browser back, and whether this consent binds it to a tenant. */
  selfRegistered?: { redirectHost: string; unbound: boolean };
  error?: string;
}

/** The warning a self-registered client's consent page carries: no tenant's admin vouched for it. */
function selfRegisteredNotice({ redirectHost, unbound }: NonNullable<ConsentView['selfRegistered']>): string {
  return (
    `<p><strong>This application registered itself</strong>: no administrator of a tenant made it. ` +
    `It will return you to <code>${escapeHtml(redirectHost)}</code>.` +
    (unbound ? ' Approving binds it to the tenant of your API key, for good.' : '') +
    `</p>`
  );
}

export function consentPage(view: ConsentView): string {
  const scopes = view.scopes.map((scope) => `<li>${escapeHtml(SCOPE_MEANINGS[scope] ?? scope)}</li>`).join('');
  return page(
    'Authorize access to grantd',
    `<h1>${escapeHtml(view.clientName)} asks for access to grantd</h1>` +
      (view.selfRegistered ? selfRegisteredNotice(view.selfRegistered) : '') +
      `<p>Client <code>${escapeHtml(view.clientId)}</code>${view.tenantName === null ? '' : ` of tenant <strong>${escapeHtml(view.tenantName)}</strong>`} would be able to:</p><ul>${scopes}</ul>` +
      (view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>` : '') +
      `<form method="post" action="${escapeHtml(view.action)}">` +
      `<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">` +
      `<label for="api_key">Sign in with an API key ${view.tenantName === null ? 'of your tenant' : `of tenant ${escapeHtml(view.tenantName)}`} that holds these scopes (used once, never stored)</label>` +
      `<input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false">` +
      `<button type="submit" name="decision" value="approve">Approve</button>` +
      `<button type="submit" name="decision" value="deny">Deny</button></form>`,
  );
}

/**
 * The page of response_mode=form_post (OAuth 2.0 Form Post Response Mode): a form of the answer's
 * parameters that its script posts to the client's redirect URI, or a button does without scripts.
 */
export function formPostPage(action: string, fields: Record<string, string>): string {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
  return page(
    'Returning to the application',
    `<form method="post" action="${escapeHtml(action)}">${inputs}` +
      `<noscript><p>Scripts are off: continue to the application.</p><button type="submit">Continue</button></noscript></form>` +
      `<script>${SUBMIT_SCRIPT}</script>`,
  );
}

/** An authorization error; with `consoleUrl`, a way back to grantd's console (whose sign-in may be what failed). */
export function errorPage(error: string, description: string, consoleUrl?: string): string {
  const back = consoleUrl
    ? `<p><a href="${escapeHtml(consoleUrl)}">Back to the grantd console</a>, or start again from the application that sent you here.</p>`
    : '';
  return page(
    'Authorization error',
    `<h1>The authorization cannot go on</h1><p><code>${escapeHtml(error)}</code></p><p>${escapeHtml(description)}</p>${back}`,
  );
}
