import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { answerJsonAsIs, answeredAsIs, answeredAsList } from '../../src/http/json-answers.ts';
import { createHttpServer } from '../../src/http/server.ts';

/** An app answering as grantd's routes do: res.json with a body, after a Content-Type, with no body, with 204. */
function appWith(install: (app: Express) => void): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  install(app);
  app.all('/object', (_req, res) => void res.status(201).json({ allowed: true, name: 'é ✓', list: [1, null] }));
  app.all('/typed', (_req, res) => void res.type('application/problem+json').json({ status: 400 }));
  app.all('/nothing', (_req, res) => void res.json(undefined));
  app.all('/empty', (_req, res) => void res.status(204).json({ gone: true }));
  app.all('/made', (_req, res) => void res.json(MADE));
  app.all('/list', (_req, res) => void res.json(answeredAsList('results', [MADE, { allowed: false, error: { detail: 'é "x"' } }, MADE])));
  app.all('/empty-list', (_req, res) => void res.json(answeredAsList('results', [])));
  return app;
}

/** A body whose JSON is made once. */
const MADE = answeredAsIs({ allowed: true, name: 'é ✓', at: null });

/** The raw answer to one request, its Date header left out. */
async function rawAnswer(port: number, request: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.end(request);
  let answer = '';
  for await (const chunk of socket) answer += (chunk as Buffer).toString('latin1');
  return answer.replace(/^Date: .*\r\n/m, '');
}

describe('answerJsonAsIs', () => {
  const ports: number[] = [];
  const servers: ReturnType<typeof createHttpServer>[] = [];

  beforeAll(async () => {
    for (const app of [appWith(() => undefined), appWith(answerJsonAsIs)]) {
      const server = createHttpServer(app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push(server);
      ports.push((server.address() as AddressInfo).port);
    }
  });
  afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

  it.each([
    ['GET', '/object'],
    ['HEAD', '/object'],
    ['POST', '/typed'],
    ['GET', '/nothing'],
    ['GET', '/empty'],
    ['GET', '/made'],
    ['HEAD', '/made'],
    ['GET', '/list'],
    ['HEAD', '/list'],
    ['GET', '/empty-list'],
  ])("answers %s %s byte for byte as Express's res.json does", async (method, path) => {
    const request = `${method} ${path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`;
    const [express, asIs] = await Promise.all(ports.map((port) => rawAnswer(port, request)));
    expect(asIs).toBe(express);
    expect(asIs).toMatch(/^HTTP\/1\.1 /);
  });

  afterEach(() => vi.restoreAllMocks());

  it('sends the bytes made once for a body answered as it is, without making them again', async () => {
    const body = Buffer.from('{"allowed":true,"name":"é ✓","at":null}').toString('latin1');
    const stringify = vi.spyOn(JSON, 'stringify');
    const request = 'GET /made HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n';
    const answers = [await rawAnswer(ports[1]!, request), await rawAnswer(ports[1]!, request)];
    expect(stringify).not.toHaveBeenCalled();
    for (const answer of answers) expect(answer.endsWith(`\r\n\r\n${body}`)).toBe(true);
    expect(Object.isFrozen(MADE)).toBe(true);
  });

  it("makes a list's JSON from its items made once, stringifying only the others", async () => {
    const stringify = vi.spyOn(JSON, 'stringify');
    const answer = await rawAnswer(ports[1]!, 'GET /list HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n');
    const objects = stringify.mock.calls.map(([value]) => value as unknown).filter((value) => typeof value === 'object');
    expect(objects).toEqual([{ allowed: false, error: { detail: 'é "x"' } }]);
    const body = Buffer.from(answer.slice(answer.indexOf('\r\n\r\n') + 4), 'latin1').toString('utf8');
    expect(JSON.parse(body)).toEqual({ results: [MADE, { allowed: false, error: { detail: 'é "x"' } }, MADE] });
  });

  it('leaves the answers to Express when the app uses its JSON settings', async () => {
    const app = express();
    app.set('json spaces', 2);
    const before = app.response.json;
    answerJsonAsIs(app);
    expect(app.response.json).toBe(before);
  });
});
