import type { Express, Response } from 'express';

/** The Content-Type Express's res.json gives an answer that has none: `application/json` with its charset added. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The JSON of each body `answeredAsIs` made, by body: its text (for lists of them: answeredAsList) and its bytes. */
const made = new WeakMap<object, { text: string; bytes: Buffer }>();
/**
 * Each body `answeredAsList` made: its one key's JSON and its items. In a WeakMap, not on the body
 * (under a symbol, say): a body is also structured content for MCP clients, whose schema of a
 * record refuses any key but a string.
 */
const lists = new WeakMap<object, { key: string; items: readonly object[] }>();

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
    const bytes = typeof body === 'object' && body !== null ? (made.get(body)?.bytes ?? listBytes(body)) : undefined;
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
  const text = JSON.stringify(body);
  made.set(body, { text, bytes: Buffer.from(text) });
  return Object.freeze(body);
}

/**
 * A body of one key, a list (a bulk's results), frozen, whose JSON the app's `res.json` makes by
 * joining its items' made once by `answeredAsIs` (most of a bulk's results are one of two), and
 * JSON.stringify of the others only: what JSON.stringify of the body would make, at less than half
 * its cost (docs/decisions.md#a-request-pays-for-what-it-needs-and-no-more). The list is the
 * caller's, which does not change it afterwards.
 */
export function answeredAsList<K extends string, T extends object>(key: K, items: T[]): Readonly<Record<K, T[]>> {
  const body = { [key]: items } as Record<K, T[]>;
  lists.set(body, { key: JSON.stringify(key), items });
  return Object.freeze(body);
}

/** The JSON of a body answeredAsList made, as bytes; undefined for any other body. */
function listBytes(body: object): Buffer | undefined {
  const list = lists.get(body);
  if (list === undefined) return undefined;
  const { key, items } = list;
  let text = `{${key}:[`;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    text += (i === 0 ? '' : ',') + (made.get(item)?.text ?? JSON.stringify(item));
  }
  return Buffer.from(`${text}]}`);
}
