/** At most this many characters of a request's path reach a log line or a problem. */
const SHOWN_PATH_CHARS = 1024;

/**
 * The path as logs and problems show it: a client chooses its length (up to the 16 KiB of headers),
 * so longer ones are cut, with a marker telling how much was left out.
 */
export function shownPath(path: string): string {
  if (path.length <= SHOWN_PATH_CHARS) return path;
  return `${path.slice(0, SHOWN_PATH_CHARS)}...(${path.length - SHOWN_PATH_CHARS} more characters)`;
}
