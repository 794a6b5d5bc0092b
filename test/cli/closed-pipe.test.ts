import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLOSED_PIPE_STATUS } from '../../src/cli/closed-pipe.ts';
import { callGrantd, GRANTD_BIN } from '../e2e/serve.ts';
import { databaseUrl } from '../helpers.ts';

type Stream = 'stdout' | 'stderr';

/**
 * Starts the built `grantd` with `closed` (its stdout or stderr) a pipe whose reader is gone before
 * the process has even loaded, as `head -1` is gone after its line; `open` is the other stream.
 */
function startIntoClosedPipe(args: string[], closed: Stream, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [GRANTD_BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child[closed].destroy();
  const open = child[closed === 'stdout' ? 'stderr' : 'stdout'];
  let written = '';
  open.on('data', (chunk: Buffer) => (written += chunk.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, written: () => written, ended };
}

// Each case is a process of its own, the server's with its start-up: a loaded machine takes seconds.
describe('grantd writing into a closed pipe', { timeout: 60_000 }, () => {
  it('exits quietly with the status SIGPIPE leaves, when its standard output has no reader (grantd --help | head -1)', async () => {
    const run = startIntoClosedPipe(['--help'], 'stdout');
    expect(await run.ended).toEqual({ code: CLOSED_PIPE_STATUS, signal: null });
    expect(run.written()).toBe('');
  });

  it('exits quietly the same when its standard error has no reader (a usage error into 2>&1 | true)', async () => {
    const run = startIntoClosedPipe(['no-such-command'], 'stderr');
    expect(await run.ended).toEqual({ code: CLOSED_PIPE_STATUS, signal: null });
    expect(run.written()).toBe('');
  });

  it('keeps serving when the reader of its "ready" line is gone (grantd serve 2>&1 | grep -m1 ready), and stops as asked', async () => {
    const run = startIntoClosedPipe(['serve'], 'stderr', { DATABASE_URL: databaseUrl(), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
    const port = await new Promise<number>((resolve, reject) => {
      const poll = setInterval(() => {
        // The log line is written just before the line for people that meets the closed pipe.
        const match = /"port":(\d+).*"msg":"grantd listening"/.exec(run.written());
        if (match) {
          clearInterval(poll);
          resolve(Number(match[1]));
        }
      }, 50);
      void run.ended.then((ended) => {
        clearInterval(poll);
        reject(new Error(`grantd serve ended (${JSON.stringify(ended)}):\n${run.written()}`));
      });
    });
    expect((await callGrantd(`http://127.0.0.1:${port}`, null, 'GET', '/healthz')).status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.ended).toEqual({ code: 0, signal: null });
    expect(run.written()).toContain(`"msg":"stopped"`);
  });
});
