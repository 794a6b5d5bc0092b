/**
 * Cerbos as a peer for the check scenario. Cerbos stores no relationships: the caller sends the
 * principal's and the resource's attributes with each request. So each check of the mix becomes a
 * POST /api/check/resources whose attributes are what an application would fetch for that document
 * (its owners, editors, direct viewers, the viewers of its folder and the folder's parent) and for
 * the principal (itself and its direct groups, one level; for an agent its user and scope mask).
 * The resource policy below then decides the same thing grantd's check does.
 */
import type { Dataset, Triple } from './dataset.ts';

const ACTIONS = ['owner', 'editor', 'viewer'] as const;
const HOLDERS: Record<string, string> = {
  owner: 'R.attr.owners',
  editor: 'R.attr.owners + R.attr.editors',
  viewer: 'R.attr.owners + R.attr.editors + R.attr.viewers + R.attr.folder_viewers',
};

export function cerbosPolicy(): string {
  const rule = (action: string, role: string, extra: string) =>
    [
      `    - actions: ["${action}"]`,
      '      effect: EFFECT_ALLOW',
      `      roles: ["${role}"]`,
      '      condition:',
      '        match:',
      `          expr: hasIntersection(P.attr.subjects, ${HOLDERS[action]})${extra}`,
    ].join('\n');
  const scope = (action: string) => ` && P.attr.scope.exists(s, s in ["*:*", "document:*", "*:${action}", "document:${action}"])`;
  return [
    'apiVersion: api.cerbos.dev/v1',
    'resourcePolicy:',
    '  version: default',
    '  resource: document',
    '  rules:',
    ...ACTIONS.map((a) => rule(a, 'user', '')),
    ...ACTIONS.map((a) => rule(a, 'agent', scope(a))),
    '',
  ].join('\n');
}

/** The Cerbos request body for one document check of the mix. */
export function cerbosRequest(ds: Dataset, check: Triple, index: number): string {
  const d = Number(check.object.slice('document:d'.length));
  const folderViewers: string[] = [];
  for (let f = ds.folderOf(d); f >= 0; f = ds.parentOf(f)) {
    folderViewers.push(`group:g${ds.folderViewerGroups[2 * f]}`, `group:g${ds.folderViewerGroups[2 * f + 1]}`, `user:u${ds.folderViewerUser[f]}`);
    if (ds.isWideFolder(f)) folderViewers.push('group:wide');
    if (ds.sizes.allGroup && f < ds.sizes.topFolders) folderViewers.push('group:all');
  }
  const editors: string[] = [];
  if (ds.docEditor[d]! >= 0) editors.push(`user:u${ds.docEditor[d]}`);
  if (ds.docGroupEditor[d]! >= 0) editors.push(`group:g${ds.docGroupEditor[d]}`);
  const [ns] = check.subject.split(':') as [string];
  const attr: Record<string, unknown> = { subjects: [...ds.subjectsOf(check.subject)] };
  if (ns === 'agent') attr.scope = ds.agentScope(Number(check.subject.slice('agent:a'.length)));
  return JSON.stringify({
    requestId: `bench-${index}`,
    principal: { id: check.subject, roles: [ns === 'agent' ? 'agent' : 'user'], attr },
    resources: [
      {
        actions: [check.relation],
        resource: {
          kind: 'document',
          id: `d${d}`,
          attr: {
            owners: [`user:u${ds.docOwner[d]}`],
            editors,
            viewers: ds.docViewer[d]! >= 0 ? [`user:u${ds.docViewer[d]}`] : [],
            folder_viewers: folderViewers,
          },
        },
      },
    ],
  });
}

/** Whether a Cerbos response allows the single action asked. */
export function cerbosAllowed(body: unknown, action: string): boolean {
  const results = (body as { results?: { actions?: Record<string, string> }[] }).results;
  return results?.[0]?.actions?.[action] === 'EFFECT_ALLOW';
}
