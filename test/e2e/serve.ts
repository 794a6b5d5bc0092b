import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { request, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createServices } from '../../src/runtime.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { basic } from '../oauth/support.ts';

export const GRANTD_BIN = join(packageRoot(), 'bin', 'grantd.js');

export interface RunningServer {
  baseUrl: string;
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Starts the built `grantd serve` on a free port and waits until it listens. */
export async function startServer(env: Record<string, string>): Promise<RunningServer> {
  const child = spawn(process.execPath, [GRANTD_BIN, 'serve'], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`grantd did not start:\n${output}`)), 60_000);
    const poll = setInterval(() => {
      const match = /"port":(\d+).*"msg":"grantd listening"/.exec(output);
      if (match) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`grantd exited with ${code}:\n${output}`));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    process: child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** The admin key of a new tenant, made over a connection of its own (closed afterwards) before any server starts. */
export async function newTenantKey(prefix: string): Promise<string> {
  const services = createServices(databaseUrl(), { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 1 }, pino({ level: 'silent' }));
  try {
    return (await createTenant(services.db, uniqueName(prefix))).key.secret;
  } finally {
    await services.close();
  }
}

/**
 * Two grantd nodes on the test database, started before the file's tests and stopped after (`b` with
 * `envOfB` too), and the admin `key` of a new tenant.
 */
export function useTwoNodes(prefix: string, envOfB: Record<string, string> = {}) {
  const nodes = {} as { a: RunningServer; b: RunningServer; key: string };
  beforeAll(async () => {
    nodes.key = await newTenantKey(prefix);
    [nodes.a, nodes.b] = await Promise.all([startServer({ DATABASE_URL: databaseUrl() }), startServer({ DATABASE_URL: databaseUrl(), ...envOfB })]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([nodes.a?.stop(), nodes.b?.stop()]);
  });
  return nodes;
}

/** The admin key grantd prints once when it bootstraps tenant `default`. */
export const printedKey = (output: string): string | undefined => /^\s+(svc_live_[A-Za-z0-9]+)$/m.exec(output)?.[1];

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `grantd` with only PATH and `env` in its environment, `stdin` piped in. */
export const runGrantd = (args: string[], env: Record<string, string>, stdin = ''): Promise<CliRun> =>
  new Promise((resolve) => {
    const child = execFile(process.execPath, [GRANTD_BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The JSON body parsed, the text of any other, null for none. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read what they expect of it
  ms: number;
}

/**
 * One request to a running grantd with the key (none when null), over a connection of its own:
 * Node's cluster hands each connection to the next worker, so consecutive calls reach them all.
 */
export const callGrantd = (
  baseUrl: string,
  key: string | null,
  method: string,
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const started = Date.now();
    const payload = body === undefined ? '' : JSON.stringify(body);
    const headers: Record<string, string | number> = {
      ...extraHeaders,
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(payload),
    };
    if (key !== null) headers.Authorization = `Bearer ${key}`;
    const req = request(`${baseUrl}${path}`, { method, agent: false, headers, timeout: 20_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const json = text !== '' && (res.headers['content-type'] ?? '').includes('json');
        resolve({ status: res.statusCode!, headers: res.headers, body: json ? JSON.parse(text) : text || null, ms: Date.now() - started });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 20 s`)));
    req.on('error', reject);
    req.end(payload);
  });

/** A confidential OAuth client's form request (RFC 6749 client_secret_basic) to a running grantd. */
export async function clientForm(
  baseUrl: string,
  path: string,
  fields: Record<string, string>,
  client: { client_id: string; client_secret: string },
) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic(client.client_id, client.client_secret),
    },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.text()) || null };
}

/** A new access token of the client, by client_credentials. */
export async function clientCredentialsToken(baseUrl: string, client: { client_id: string; client_secret: string }): Promise<string> {
  const { status, body } = await clientForm(baseUrl, '/v1/oauth/token', { grant_type: 'client_credentials' }, client);
  if (status !== 200 || body === null) throw new Error(`token endpoint answered ${status}: ${body}`);
  return (JSON.parse(body) as { access_token: string }).access_token;
}
