import { randomFillSync } from 'node:crypto';

/** Ids made from one fill of random bytes, as node:crypto's randomUUID batches its own. */
const BATCH = 128;
const random = Buffer.allocUnsafeSlow(16 * BATCH);
let used = BATCH;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Where each random byte's two hex digits go in xxxxxxxx-xxxx-4xxx-Nxxx-xxxxxxxxxxxx. */
const DIGITS_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const text = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1');

/**
 * A random (version 4) UUID, as `crypto.randomUUID()` makes one, written into a buffer and read out
 * as one string: randomUUID joins 20 strings, about 600 bytes of garbage a request where this makes
 * the 56 of the id (docs/decisions.md#a-request-pays-for-what-it-needs-and-no-more).
 */
export function newRequestId(): string {
  if (used === BATCH) {
    randomFillSync(random);
    used = 0;
  }
  const offset = 16 * used++;
  for (let i = 0; i < 16; i++) {
    let byte = random[offset + i]!;
    // RFC 9562: the version (4) in byte 6's high nibble, the variant (10) in byte 8's two high bits.
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    text[DIGITS_AT[i]!] = HEX[byte >> 4]!;
    text[DIGITS_AT[i]! + 1] = HEX[byte & 0x0f]!;
  }
  return text.toString('latin1');
}
