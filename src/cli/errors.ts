/**
 * A failure the CLI explains in one line, with no stack trace: a bad argument or environment
 * (`usage`, exit 2), or something that went wrong and says what to do about it (exit 1).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
