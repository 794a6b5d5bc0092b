/**
 * Deterministic benchmark dataset (seeded PRNG), shared by the grantd loader, the SpiceDB child and
 * the request mixes. The same (size, seed) always yields the same grants in the same order.
 *
 * Shape (S; L has ten times the documents, hence about ten times the grants):
 * - users u0..u9999; each is a member of 2 distinct random groups of g0..g999 (about 20 members each).
 * - agents a0..a999, each bound to a random user by (agent:aN, member, user:uM), scope masks cycling
 *   through document:viewer, document:*, *:* and folder:viewer (the last covers no document relation).
 * - folders f0..f999: f0..f9 are top folders, every other fK has parent f(K mod 10), i.e. the grant
 *   (folder:f(K mod 10), parent, folder:fK). Each folder is viewed by 2 random groups and 1 random user.
 * - documents dJ live in folder f(J mod 1000): (folder:f, parent, document:dJ). Each has a random
 *   owner, an editor (50%), a direct viewer (20%) and a group editor (2%).
 * - Wide subjects, documented choices:
 *   group:wide views the leaf folders f10, f11, ... holding 10,000 documents in all (100 folders of
 *   100 documents in S, 10 folders of 1,000 in L). Users u0..u19 are members of group:wide, so each
 *   of them reaches 10,000 documents or more (the "10,000+" listing subjects) in both sizes.
 *   L only: group:all views all ten top folders, so it reaches every one of the 1,000,000 documents.
 * - A share of grants are time-bound with a far-future expiry (WINDOWED_EVERY).
 * - Tenant bench-rules only (scenario check_rules, issue 42): `document` gains `blocked` and
 *   `viewer_unblocked` (RULES_NAMESPACES), and its grants add rulesTriples(): blocked users and
 *   groups, and public documents viewed by `user:*`. The dataset's own tenant keeps today's model.
 */

export type SizeName = 'S' | 'L';

export interface Sizes {
  users: number;
  groups: number;
  agents: number;
  folders: number;
  topFolders: number;
  documents: number;
  /** Whether group:all (views every top folder, so every document) exists. */
  allGroup: boolean;
}

export const SIZES: Record<SizeName, Sizes> = {
  S: { users: 10_000, groups: 1_000, agents: 1_000, folders: 1_000, topFolders: 10, documents: 100_000, allGroup: false },
  L: { users: 10_000, groups: 1_000, agents: 1_000, folders: 1_000, topFolders: 10, documents: 1_000_000, allGroup: true },
};

export const WIDE_MEMBERS = 20;
export const WIDE_DOCUMENTS = 10_000;
export const AGENT_SCOPES: readonly string[][] = [['document:viewer'], ['document:*'], ['*:*'], ['folder:viewer']];

export interface Triple {
  subject: string;
  relation: string;
  object: string;
  /** A far-future expiry (docs/model.md#time-bound-grants): the grant is in force throughout the run. */
  expires_at?: string;
}

/**
 * Every WINDOWED_EVERY-th document's direct viewer grant expires in FAR_FUTURE, so that checks walk
 * windowed grants beside plain ones (in memory they are kept aside; in PostgreSQL their window is
 * read) while every answer stays what the reference model says.
 */
export const WINDOWED_EVERY = 4;
export const FAR_FUTURE = '2999-01-01T00:00:00.000Z';

export interface NamespaceDef {
  name: string;
  relations: Record<string, { includes?: string[]; excludes?: string[] }>;
}

export const NAMESPACES: NamespaceDef[] = [
  { name: 'group', relations: { member: {} } },
  { name: 'folder', relations: { parent: {}, viewer: { includes: ['parent->viewer'] } } },
  {
    name: 'document',
    relations: { parent: {}, owner: {}, editor: { includes: ['owner'] }, viewer: { includes: ['editor', 'parent->viewer'] } },
  },
];

/** The tenant whose model and grants are asked: the dataset's, or bench-rules (the dataset with RULES_NAMESPACES and rulesTriples). */
export type TenantModel = 'dataset' | 'rules';

/** Every BLOCKED_EVERY-th document (d % BLOCKED_EVERY === 3) blocks its editor, or its owner when it has none. */
export const BLOCKED_EVERY = 10;
/** Every BLOCKED_GROUP_EVERY-th document (d % BLOCKED_GROUP_EVERY === 31, public ones) blocks the first viewer group of its folder. */
export const BLOCKED_GROUP_EVERY = 100;
/** Every PUBLIC_EVERY-th document (d % PUBLIC_EVERY === 11) is viewed by `user:*`: every user, named in a grant or not. */
export const PUBLIC_EVERY = 20;

/** The model of tenant bench-rules: the dataset's, with a `blocked` relation on documents and a viewer that is not blocked. */
export const RULES_NAMESPACES: NamespaceDef[] = NAMESPACES.map((ns) =>
  ns.name === 'document'
    ? { ...ns, relations: { ...ns.relations, blocked: {}, viewer_unblocked: { includes: ['viewer'], excludes: ['blocked'] } } }
    : ns,
);

/** mulberry32: small, fast, good enough for benchmark data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Dataset {
  readonly userGroups: Int32Array; // 2 per user
  readonly agentUser: Int32Array;
  readonly folderViewerGroups: Int32Array; // 2 per folder
  readonly folderViewerUser: Int32Array;
  readonly docOwner: Int32Array;
  readonly docEditor: Int32Array; // -1: none
  readonly docViewer: Int32Array; // -1: none
  readonly docGroupEditor: Int32Array; // -1: none

  constructor(
    readonly size: SizeName,
    readonly seed: number,
    readonly sizes: Sizes = SIZES[size],
  ) {
    const rand = prng(seed);
    const int = (n: number) => Math.floor(rand() * n);
    const z = this.sizes;
    /** Two distinct random groups, as consecutive entries of a pair array. */
    const twoGroups = (length: number) => {
      const pairs = new Int32Array(length * 2);
      for (let k = 0; k < length; k++) {
        const a = int(z.groups);
        let b = int(z.groups - 1);
        if (b >= a) b++;
        pairs[2 * k] = a;
        pairs[2 * k + 1] = b;
      }
      return pairs;
    };
    this.userGroups = twoGroups(z.users);
    this.agentUser = Int32Array.from({ length: z.agents }, () => int(z.users));
    this.folderViewerGroups = twoGroups(z.folders);
    this.folderViewerUser = Int32Array.from({ length: z.folders }, () => int(z.users));
    this.docOwner = new Int32Array(z.documents);
    this.docEditor = new Int32Array(z.documents);
    this.docViewer = new Int32Array(z.documents);
    this.docGroupEditor = new Int32Array(z.documents);
    for (let d = 0; d < z.documents; d++) {
      this.docOwner[d] = int(z.users);
      this.docEditor[d] = rand() < 0.5 ? int(z.users) : -1;
      this.docViewer[d] = rand() < 0.2 ? int(z.users) : -1;
      this.docGroupEditor[d] = rand() < 0.02 ? int(z.groups) : -1;
    }
  }

  private ownerIndex: { start: Int32Array; docs: Int32Array } | null = null;

  /** The documents `user` owns (built once, on first use). */
  ownedBy(user: number): Int32Array {
    if (!this.ownerIndex) {
      const start = new Int32Array(this.sizes.users + 1);
      for (const owner of this.docOwner) start[owner + 1]!++;
      for (let u = 0; u < this.sizes.users; u++) start[u + 1]! += start[u]!;
      const fill = start.slice(0, this.sizes.users);
      const docs = new Int32Array(this.sizes.documents);
      this.docOwner.forEach((owner, d) => (docs[fill[owner]!++] = d));
      this.ownerIndex = { start, docs };
    }
    return this.ownerIndex.docs.subarray(this.ownerIndex.start[user], this.ownerIndex.start[user + 1]);
  }

  /** The leaf folders group:wide views: 10,000 documents whatever the size. */
  isWideFolder(folder: number): boolean {
    const first = this.sizes.topFolders;
    return folder >= first && folder < first + WIDE_DOCUMENTS / (this.sizes.documents / this.sizes.folders);
  }

  folderOf(doc: number): number {
    return doc % this.sizes.folders;
  }

  parentOf(folder: number): number {
    return folder < this.sizes.topFolders ? -1 : folder % this.sizes.topFolders;
  }

  agentScope(agent: number): string[] {
    return AGENT_SCOPES[agent % AGENT_SCOPES.length]!;
  }

  /** Every grant, in a fixed order, lazily (L has about 3 million). */
  *triples(): Generator<Triple> {
    const z = this.sizes;
    for (let u = 0; u < z.users; u++) {
      yield { subject: `user:u${u}`, relation: 'member', object: `group:g${this.userGroups[2 * u]}` };
      yield { subject: `user:u${u}`, relation: 'member', object: `group:g${this.userGroups[2 * u + 1]}` };
    }
    for (let u = 0; u < WIDE_MEMBERS; u++) yield { subject: `user:u${u}`, relation: 'member', object: 'group:wide' };
    for (let a = 0; a < z.agents; a++) yield { subject: `agent:a${a}`, relation: 'member', object: `user:u${this.agentUser[a]}` };
    for (let f = 0; f < z.folders; f++) {
      const parent = this.parentOf(f);
      if (parent >= 0) yield { subject: `folder:f${parent}`, relation: 'parent', object: `folder:f${f}` };
      yield { subject: `group:g${this.folderViewerGroups[2 * f]}`, relation: 'viewer', object: `folder:f${f}` };
      yield { subject: `group:g${this.folderViewerGroups[2 * f + 1]}`, relation: 'viewer', object: `folder:f${f}` };
      yield { subject: `user:u${this.folderViewerUser[f]}`, relation: 'viewer', object: `folder:f${f}` };
    }
    for (let f = 0; f < z.folders; f++) if (this.isWideFolder(f)) yield { subject: 'group:wide', relation: 'viewer', object: `folder:f${f}` };
    if (z.allGroup) for (let f = 0; f < z.topFolders; f++) yield { subject: 'group:all', relation: 'viewer', object: `folder:f${f}` };
    for (let d = 0; d < z.documents; d++) {
      const doc = `document:d${d}`;
      yield { subject: `folder:f${this.folderOf(d)}`, relation: 'parent', object: doc };
      yield { subject: `user:u${this.docOwner[d]}`, relation: 'owner', object: doc };
      if (this.docEditor[d]! >= 0) yield { subject: `user:u${this.docEditor[d]}`, relation: 'editor', object: doc };
      if (this.docViewer[d]! >= 0) {
        const viewer = { subject: `user:u${this.docViewer[d]}`, relation: 'viewer', object: doc };
        yield d % WINDOWED_EVERY === 0 ? { ...viewer, expires_at: FAR_FUTURE } : viewer;
      }
      if (this.docGroupEditor[d]! >= 0) yield { subject: `group:g${this.docGroupEditor[d]}`, relation: 'editor', object: doc };
    }
  }

  /** Who document dJ blocks in tenant bench-rules (derived from the arrays, so the dataset's own grants are drawn as before). */
  blockedOn(doc: number): string[] {
    const blocked: string[] = [];
    if (doc % BLOCKED_EVERY === 3) blocked.push(`user:u${this.docEditor[doc]! >= 0 ? this.docEditor[doc] : this.docOwner[doc]}`);
    if (doc % BLOCKED_GROUP_EVERY === 31) blocked.push(`group:g${this.folderViewerGroups[2 * this.folderOf(doc)]}`);
    return blocked;
  }

  isPublic(doc: number): boolean {
    return doc % PUBLIC_EVERY === 11;
  }

  /** The grants tenant bench-rules has besides the dataset's: the blocked subjects and the public documents. */
  *rulesTriples(): Generator<Triple> {
    for (let d = 0; d < this.sizes.documents; d++) {
      for (const subject of this.blockedOn(d)) yield { subject, relation: 'blocked', object: `document:d${d}` };
      if (this.isPublic(d)) yield { subject: 'user:*', relation: 'viewer', object: `document:d${d}` };
    }
  }

  // ---- Reference model: docs/model.md#what-a-check-means, evaluated directly on the arrays above. ----

  /** {S} ∪ groups(S) ∪ {S.ns:*}: the subject, the objects it is a direct `member` of (one level) and its namespace's wildcard. */
  subjectsOf(subject: string): Set<string> {
    const [ns, id] = subject.split(':') as [string, string];
    const out = new Set([subject, `${ns}:*`]);
    const n = Number(id.slice(1));
    if (ns === 'user' && /^u\d+$/.test(id) && n < this.sizes.users) {
      out.add(`group:g${this.userGroups[2 * n]}`);
      out.add(`group:g${this.userGroups[2 * n + 1]}`);
      if (n < WIDE_MEMBERS) out.add('group:wide');
    }
    if (ns === 'agent' && /^a\d+$/.test(id) && n < this.sizes.agents) out.add(`user:u${this.agentUser[n]}`);
    return out;
  }

  private viewsFolder(subjects: Set<string>, folder: number): boolean {
    for (let f = folder; f >= 0; f = this.parentOf(f)) {
      if (subjects.has(`group:g${this.folderViewerGroups[2 * f]}`)) return true;
      if (subjects.has(`group:g${this.folderViewerGroups[2 * f + 1]}`)) return true;
      if (subjects.has(`user:u${this.folderViewerUser[f]}`)) return true;
      if (this.isWideFolder(f) && subjects.has('group:wide')) return true;
      if (this.sizes.allGroup && f < this.sizes.topFolders && subjects.has('group:all')) return true;
    }
    return false;
  }

  private holds(subjects: Set<string>, relation: string, doc: number, tenant: TenantModel): boolean {
    if (tenant === 'rules' && relation === 'blocked') return this.blockedOn(doc).some((s) => subjects.has(s));
    if (tenant === 'rules' && relation === 'viewer_unblocked')
      return this.holds(subjects, 'viewer', doc, tenant) && !this.holds(subjects, 'blocked', doc, tenant);
    if (tenant === 'rules' && relation === 'viewer' && this.isPublic(doc) && subjects.has('user:*')) return true;
    if (relation === 'parent') return subjects.has(`folder:f${this.folderOf(doc)}`);
    const owner = subjects.has(`user:u${this.docOwner[doc]}`);
    if (relation === 'owner') return owner;
    const editor =
      owner ||
      (this.docEditor[doc]! >= 0 && subjects.has(`user:u${this.docEditor[doc]}`)) ||
      (this.docGroupEditor[doc]! >= 0 && subjects.has(`group:g${this.docGroupEditor[doc]}`));
    if (relation === 'editor') return editor;
    if (relation !== 'viewer') throw new Error(`model: unknown relation ${relation}`);
    return editor || (this.docViewer[doc]! >= 0 && subjects.has(`user:u${this.docViewer[doc]}`)) || this.viewsFolder(subjects, this.folderOf(doc));
  }

  private agentMayHold(subject: string, relation: string): boolean {
    if (!subject.startsWith('agent:')) return true;
    const n = Number(subject.slice('agent:a'.length));
    if (!Number.isInteger(n) || n >= this.sizes.agents) return false;
    return this.agentScope(n).some((entry) => {
      const [ns, rel] = entry.split(':');
      return (ns === '*' || ns === 'document') && (rel === '*' || rel === relation);
    });
  }

  /**
   * The expected answer of check(subject, relation, document:dJ) in the tenant's model and grants.
   * Documents only. The agent's scope is applied once, to the checked relation (not to `blocked`).
   */
  expect(check: Triple, tenant: TenantModel = 'dataset'): boolean {
    const doc = Number(check.object.slice('document:d'.length));
    if (!this.agentMayHold(check.subject, check.relation)) return false;
    return this.holds(this.subjectsOf(check.subject), check.relation, doc, tenant);
  }

  /** The expected full listing of documents for (subject, relation), in byte order. */
  expectList(subject: string, relation: string): string[] {
    if (!this.agentMayHold(subject, relation)) return [];
    const subjects = this.subjectsOf(subject);
    const ids: string[] = [];
    for (let d = 0; d < this.sizes.documents; d++) if (this.holds(subjects, relation, d, 'dataset')) ids.push(`d${d}`);
    return ids.sort();
  }
}

export interface MixedCheck extends Triple {
  kind: string;
}

export interface LabelledCheck extends MixedCheck {
  expected: boolean;
}

/** The mix with the reference model's answer to each check, in the tenant's model. */
export function labelled(ds: Dataset, checks: MixedCheck[], tenant: TenantModel = 'dataset'): LabelledCheck[] {
  return checks.map((c) => ({ ...c, expected: ds.expect(c, tenant) }));
}

/**
 * A fixed mix of document checks whose answers go through direct grants, includes, parent arrows
 * (one and two levels), group membership and agents, plus denials of several kinds; shuffled, so
 * that consecutive requests differ in kind. Deterministic for (dataset, count, seed).
 */
export function checkMix(ds: Dataset, count: number, seed: number): MixedCheck[] {
  const rand = prng(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const z = ds.sizes;
  const doc = () => int(z.documents);
  const docWith = (arr: Int32Array) => {
    for (;;) {
      const d = doc();
      if (arr[d]! >= 0) return d;
    }
  };
  const pickMember = (group: number) => {
    for (;;) {
      const u = int(z.users);
      if (ds.userGroups[2 * u] === group || ds.userGroups[2 * u + 1] === group) return u;
    }
  };
  const owned = (user: number) => {
    const docs = ds.ownedBy(user);
    return docs.length > 0 ? docs[int(docs.length)]! : null;
  };
  /** An agent whose scope mask is AGENT_SCOPES[scopeIndex]. */
  const agentFor = (scopeIndex: number) => int(z.agents / AGENT_SCOPES.length) * AGENT_SCOPES.length + scopeIndex;
  const c = (subject: string, relation: string, d: number): Triple => ({ subject, relation, object: `document:d${d}` });
  const user = (u: number) => `user:u${u}`;
  const inSubfolder = () => {
    for (;;) {
      const d = doc();
      if (ds.parentOf(ds.folderOf(d)) >= 0) return d;
    }
  };
  /** [kind, weight, maker]: allowed kinds first, then denials. */
  const makers: [string, number, () => Triple][] = [
    [
      'direct:owner',
      1,
      () => {
        const d = doc();
        return c(user(ds.docOwner[d]!), 'owner', d);
      },
    ],
    [
      'direct:editor',
      1,
      () => {
        const d = docWith(ds.docEditor);
        return c(user(ds.docEditor[d]!), 'editor', d);
      },
    ],
    [
      'includes:owner->viewer',
      1,
      () => {
        const d = doc();
        return c(user(ds.docOwner[d]!), 'viewer', d);
      },
    ],
    [
      'includes:editor->viewer',
      1,
      () => {
        const d = docWith(ds.docEditor);
        return c(user(ds.docEditor[d]!), 'viewer', d);
      },
    ],
    [
      'arrow:folder-viewer',
      1,
      () => {
        const d = doc();
        return c(user(ds.folderViewerUser[ds.folderOf(d)]!), 'viewer', d);
      },
    ],
    [
      'arrow:top-folder-viewer',
      1,
      () => {
        const d = inSubfolder();
        return c(user(ds.folderViewerUser[ds.parentOf(ds.folderOf(d))]!), 'viewer', d);
      },
    ],
    [
      'group:folder-viewer',
      1,
      () => {
        const d = doc();
        return c(user(pickMember(ds.folderViewerGroups[2 * ds.folderOf(d) + int(2)]!)), 'viewer', d);
      },
    ],
    [
      'group:editor',
      0.5,
      () => {
        const d = docWith(ds.docGroupEditor);
        return c(user(pickMember(ds.docGroupEditor[d]!)), 'editor', d);
      },
    ],
    [
      'group:wide-member',
      0.5,
      () =>
        c(
          user(int(WIDE_MEMBERS)),
          'viewer',
          int(z.documents / z.folders) * z.folders + z.topFolders + int(WIDE_DOCUMENTS / (z.documents / z.folders)),
        ),
    ],
    [
      'agent:scope-allows',
      1,
      () => {
        const a = agentFor(int(3));
        return c(`agent:a${a}`, 'viewer', owned(ds.agentUser[a]!) ?? doc());
      },
    ],
    [
      'agent:scope-denies',
      0.5,
      () => {
        const a = agentFor([0, 3][int(2)]!);
        return c(`agent:a${a}`, a % 4 === 0 ? 'editor' : 'viewer', owned(ds.agentUser[a]!) ?? doc());
      },
    ],
    ['agent:random-doc', 0.5, () => c(`agent:a${int(z.agents)}`, 'viewer', doc())],
    ['deny:random-user', 3, () => c(user(int(z.users)), ['viewer', 'editor', 'owner'][int(3)]!, doc())],
    [
      'deny:viewer-not-editor',
      1,
      () => {
        const d = docWith(ds.docViewer);
        return c(user(ds.docViewer[d]!), 'editor', d);
      },
    ],
    [
      'deny:editor-not-owner',
      1,
      () => {
        const d = docWith(ds.docEditor);
        return c(user(ds.docEditor[d]!), 'owner', d);
      },
    ],
    ['deny:unknown-user', 0.5, () => c(`user:nobody${int(1000)}`, 'viewer', doc())],
  ];
  const total = makers.reduce((sum, [, weight]) => sum + weight, 0);
  const out: MixedCheck[] = [];
  for (const [kind, weight, make] of makers) {
    const n = Math.round((count * weight) / total);
    for (let i = 0; i < n; i++) out.push({ ...make(), kind });
  }
  // Fixed shuffle, so that consecutive requests differ in kind.
  for (let i = out.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * check_rules' mix (tenant bench-rules): checkMix's checks asked of `viewer_unblocked` instead, with
 * a fifth more of two kinds of its own: a blocked subject on the document that blocks it, and a
 * random or unknown user on a public document. Shuffled; deterministic for (dataset, count, seed).
 */
export function rulesMix(ds: Dataset, count: number, seed: number): MixedCheck[] {
  const rand = prng(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const documents = ds.sizes.documents;
  const out = checkMix(ds, Math.round(count * 0.8), seed).map((c) => ({ ...c, relation: 'viewer_unblocked' }));
  for (let i = 0; out.length < count; i++) {
    if (i % 2 === 0) {
      const d = int(documents / BLOCKED_EVERY) * BLOCKED_EVERY + 3;
      out.push({ subject: ds.blockedOn(d)[0]!, relation: 'viewer_unblocked', object: `document:d${d}`, kind: 'rules:blocked' });
    } else {
      const d = int(documents / PUBLIC_EVERY) * PUBLIC_EVERY + 11;
      const subject = int(2) ? `user:u${int(ds.sizes.users)}` : `user:nobody${int(1000)}`;
      out.push({ subject, relation: 'viewer_unblocked', object: `document:d${d}`, kind: 'rules:public' });
    }
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
