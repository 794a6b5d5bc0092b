import { constants } from 'node:os';

/** The status a shell reports for a program SIGPIPE ended (128 + 13), as it reports `yes` in `yes | head -1`. */
export const CLOSED_PIPE_STATUS = 128 + constants.signals.SIGPIPE;

/**
 * When the reader of standard output or error goes away (`grantd --help | head -1`), a Unix tool
 * dies quietly of SIGPIPE. Node.js ignores that signal and raises EPIPE on the stream instead,
 * which would end the process with a stack trace: here a command exits at once, quietly, with
 * SIGPIPE's status. While `keepRunning()` (the server), it goes on and that stream's later output
 * is dropped (a destroyed stream drops what it is given), as pino drops its log lines on EPIPE: a
 * `grantd serve 2>&1 | grep -m1 ready` must not stop the server, nor skip stopping its database.
 */
export function exitQuietlyOnClosedPipe(keepRunning: () => boolean): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      if (!keepRunning()) process.exit(CLOSED_PIPE_STATUS);
    });
  }
}
