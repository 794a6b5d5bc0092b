import type { Express, Response } from 'express';

/** The Content-Type Express's res.json gives an answer that has none: `application/json` with its charset added. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The bytes of each body `answeredAsIs` made, by body. */
const made = new WeakMap<object, Buffer>();

/**
 * Makes the app's `res.json` answer as Express's does, with less work each time: Express looks the
 * Content-Type up in its MIME table, then parses and formats it again to add the charset, on every
 * answer; here the result is set as it is, and the body goes to `res.send` as bytes, which it sends
 * without parsing the Content-Type (its Content-Length, freshness, HEAD and 204/304 handling stay).
 * An answer whose Content-Type was set before is left to Express, as are all of them if the app
 * uses Express's JSON settings, which this does not apply.
 */
export function answerJsonAsIs(app: Express): void {
  if (['json replacer', 'json spaces', 'json escape'].some((setting) => app.get(setting) !== undefined)) return;
  const expressJson = app.response.json;
  app.response.json = function json(this: Response, body?: unknown) {
    if (this.hasHeader('Content-Type')) return expressJson.call(this, body);
    this.setHeader('Content-Type', JSON_CONTENT_TYPE);
    const bytes = typeof body === 'object' && body !== null ? made.get(body) : undefined;
    if (bytes) return this.send(bytes);
    const text = JSON.stringify(body) as string | undefined;
    return this.send(text === undefined ? text : Buffer.from(text));
  };
}

/**
 * A body of plain values (no nested object) answered by many requests, frozen, with its JSON made
 * once: the app's `res.json` (answerJsonAsIs) sends these bytes for it instead of making them again
 * (a check's two answers: docs/decisions.md#a-request-pays-for-what-it-needs-and-no-more). Every
 * answer shares the one buffer, which nothing writes to.
 */
export function answeredAsIs<T extends Record<string, string | number | boolean | null>>(body: T): Readonly<T> {
  made.set(body, Buffer.from(JSON.stringify(body)));
  return Object.freeze(body);
}
