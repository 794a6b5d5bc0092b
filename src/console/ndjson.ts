// Importing grants from an NDJSON file, one {"subject", "relation", "object"} per line, as
// `grantd import` reads them: every line is checked before anything is sent, then the grants go in
// batches, each written all or nothing.
import { TripleSchema } from '../../contract/index.ts';
import type { GrantdClient } from '../client/index.ts';

/** The most one POST /v1/grants/batch takes. */
export const BATCH_SIZE = 1000;

export type Triple = ReturnType<typeof TripleSchema.parse>;

export interface ParsedFile {
  grants: Triple[];
  /** Lines that are no grant, with their 1-based numbers; blank lines are skipped. */
  invalid: { line: number; message: string }[];
}

export function parseNdjson(text: string): ParsedFile {
  const grants: Triple[] = [];
  const invalid: ParsedFile['invalid'] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return invalid.push({ line, message: 'not JSON' });
    }
    const parsed = TripleSchema.safeParse(value);
    if (parsed.success) grants.push(parsed.data);
    else invalid.push({ line, message: parsed.error.issues.map((i) => `${i.path.join('.') || 'line'}: ${i.message}`).join('; ') });
  });
  return { grants, invalid };
}

export interface ImportProgress {
  sent: number;
  written: number;
}

/**
 * Writes the grants batch after batch, reporting progress after each. Rejects with the first
 * refused batch's error; the batches before it stay written (`progress` says how many grants).
 */
export async function importGrants(api: GrantdClient, grants: Triple[], onProgress: (progress: ImportProgress) => void): Promise<ImportProgress> {
  const progress = { sent: 0, written: 0 };
  for (let start = 0; start < grants.length; start += BATCH_SIZE) {
    const writes = grants.slice(start, start + BATCH_SIZE);
    const result = await api.grants.batch({ writes, deletes: [] }, { timeoutMs: 60_000 });
    progress.sent += writes.length;
    progress.written += result.written;
    onProgress({ ...progress });
  }
  return progress;
}
