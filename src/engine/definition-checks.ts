import { DomainError } from '../errors.ts';
import { parseReference, type NamespaceDefinition, type RelationDefinition, type RelationDefinitions } from './definitions.ts';

// The checks a model passes before it is stored (docs/model.md#model-limits): each namespace's
// definitions alone (validateRelations), then the tenant's model as a whole (assertNoExclusionCycle).

/** The lists of references a relation definition holds, in the order their references are evaluated and named. */
export const REFERENCE_LISTS = ['includes', 'requires', 'excludes'] as const;
type ReferenceList = (typeof REFERENCE_LISTS)[number];

/**
 * A namespace's relations in the order people are shown them (CLI and console): by name, in byte
 * order. The stored definition keeps no declared order to show: PostgreSQL's jsonb orders an
 * object's keys by length, then bytes, which reads as scrambled.
 */
export const relationsByName = (relations: RelationDefinitions): [string, RelationDefinition][] =>
  Object.entries(relations).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** One reference of a definition, with where it lies: `relations.viewer.requires[0]`. */
interface Reference {
  relation: string;
  list: ReferenceList;
  entry: string;
  path: string;
}

function referencesOf(relation: string, definition: RelationDefinition): Reference[] {
  return REFERENCE_LISTS.flatMap((list) =>
    (definition[list] ?? []).map((entry, i) => ({ relation, list, entry, path: `relations.${relation}.${list}[${i}]` })),
  );
}

/**
 * Rejects definitions the engine could not evaluate: a reference (under includes, requires or
 * excludes) naming a relation the namespace does not declare (for arrows, the relation walked
 * through), or a cycle of same-object references, which no grant could ever end. The problem names
 * the reference's path. The far side of an arrow lives in whatever namespace the related object has,
 * so it is not checked here; cycles through arrows are harmless unless they pass through an
 * exclusion, which assertNoExclusionCycle refuses over the tenant's whole model.
 */
export function validateRelations(relations: RelationDefinitions): void {
  const declared = new Set(Object.keys(relations));
  const references = Object.entries(relations).flatMap(([relation, definition]) => referencesOf(relation, definition));
  for (const { relation, list, entry, path } of references) {
    const reference = parseReference(entry);
    const named = reference.kind === 'same' ? reference.relation : reference.via;
    if (!declared.has(named)) {
      throw new DomainError('invalid-namespace', `relation ${relation} ${list} "${entry}", but ${named} is not declared`).at(path);
    }
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (relation: string, path: Reference[]): void => {
    if (state.get(relation) === 'done') return;
    if (state.get(relation) === 'visiting') throw sameObjectCycle(path.slice(path.findIndex((step) => step.relation === relation)));
    state.set(relation, 'visiting');
    for (const step of referencesOf(relation, relations[relation]!)) {
      const reference = parseReference(step.entry);
      if (reference.kind === 'same') visit(reference.relation, [...path, step]);
    }
    state.set(relation, 'done');
  };
  for (const relation of declared) visit(relation, []);
}

/** The problem of a cycle of same-object references, at the path of its first reference. */
function sameObjectCycle(cycle: Reference[]): DomainError {
  const start = cycle[0]!;
  const detail = cycle.every((step) => step.list === 'includes')
    ? `relations include each other in a cycle: ${[...cycle.map((step) => step.relation), start.relation].join(' -> ')}`
    : `relations refer to each other in a cycle, which no grant could end: ${[...cycle.map((s) => `${s.relation} ${s.list} ${s.entry}`), start.relation].join(' -> ')}`;
  return new DomainError('invalid-namespace', detail).at(start.path);
}

/** An edge of the relation graph, to a node: a namespace's relation, or (an arrow's far side) every namespace's relation of one name. */
interface Edge {
  to: number;
  /** The reference that makes the edge, as the cycle is told: `document#viewer includes parent->viewer`; none past an arrow's fan-out. */
  told: string | null;
  excludes: boolean;
}

/**
 * Refuses a model (a tenant's namespaces, each already passing validateRelations) whose graph of
 * relations has a cycle through an `excludes` reference: the nodes are (namespace, relation), the
 * edges every reference of includes, requires and excludes, a same-object R to the namespace's R,
 * an arrow T->R to R of every namespace declaring R. Such a relation would hold only if it did not
 * (docs/model.md#model-limits). The problem's detail names one such cycle: the shortest through the first exclusion found on one.
 */
export function assertNoExclusionCycle(model: readonly NamespaceDefinition[]): void {
  const graph = relationGraph(model);
  const component = stronglyConnected(graph.edges);
  for (const [from, edges] of graph.edges.entries()) {
    const closing = edges.find((edge) => edge.excludes && component[edge.to] === component[from]);
    if (closing) {
      const cycle = [{ from, edge: closing }, ...shortestPath(graph.edges, closing.to, from)];
      const told = cycle.flatMap(({ from: node, edge }) => (edge.told === null ? [] : [`${graph.names[node]} ${edge.told}`]));
      throw new DomainError(
        'invalid-namespace',
        `a relation may not exclude what depends on it; this cycle passes through an exclusion: ${[...told, graph.names[from]].join(' -> ')}`,
      );
    }
  }
}

/** The model's relations as numbered nodes (`document#viewer`), and one node per relation name an arrow reaches (`*#viewer`). */
function relationGraph(model: readonly NamespaceDefinition[]): { names: string[]; edges: Edge[][] } {
  const names: string[] = [];
  const edges: Edge[][] = [];
  const ids = new Map<string, number>();
  const node = (name: string): number => {
    let id = ids.get(name);
    if (id === undefined) {
      id = names.push(name) - 1;
      ids.set(name, id);
      edges.push([]);
    }
    return id;
  };
  const defined = [...model].filter((ns) => ns.relations !== null).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const ns of defined)
    for (const relation of Object.keys(ns.relations!))
      edges[node(`*#${relation}`)]!.push({ to: node(`${ns.name}#${relation}`), told: null, excludes: false });
  for (const ns of defined) {
    for (const [relation, definition] of Object.entries(ns.relations!)) {
      const from = node(`${ns.name}#${relation}`);
      for (const { list, entry } of referencesOf(relation, definition)) {
        const reference = parseReference(entry);
        const to = reference.kind === 'same' ? ids.get(`${ns.name}#${reference.relation}`) : ids.get(`*#${reference.relation}`);
        // An arrow to a relation no namespace declares reaches nothing (yet): no edge.
        if (to !== undefined) edges[from]!.push({ to, told: `${list} ${entry}`, excludes: list === 'excludes' });
      }
    }
  }
  return { names, edges };
}

/** Each node's strongly connected component (Tarjan's algorithm, iterative: a model has up to thousands of relations). */
function stronglyConnected(edges: Edge[][]): number[] {
  const index = new Array<number>(edges.length).fill(-1);
  const low = new Array<number>(edges.length).fill(0);
  const component = new Array<number>(edges.length).fill(-1);
  const stack: number[] = [];
  let counter = 0;
  let components = 0;
  for (let root = 0; root < edges.length; root++) {
    if (index[root] !== -1) continue;
    const work: { node: number; next: number }[] = [{ node: root, next: 0 }];
    index[root] = low[root] = counter++;
    stack.push(root);
    while (work.length > 0) {
      const frame = work.at(-1)!;
      const edge = edges[frame.node]![frame.next++];
      if (edge !== undefined) {
        if (index[edge.to] === -1) {
          index[edge.to] = low[edge.to] = counter++;
          stack.push(edge.to);
          work.push({ node: edge.to, next: 0 });
        } else if (component[edge.to] === -1) {
          low[frame.node] = Math.min(low[frame.node]!, index[edge.to]!);
        }
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent) low[parent.node] = Math.min(low[parent.node]!, low[frame.node]!);
      if (low[frame.node] === index[frame.node]) {
        let member: number;
        do {
          member = stack.pop()!;
          component[member] = components;
        } while (member !== frame.node);
        components++;
      }
    }
  }
  return component;
}

/** The edges of a shortest path from `start` to `goal` (breadth first), each with the node it leaves. */
function shortestPath(edges: Edge[][], start: number, goal: number): { from: number; edge: Edge }[] {
  const reached = new Map<number, { from: number; edge: Edge } | null>([[start, null]]);
  const queue = [start];
  for (let head = 0; head < queue.length && !reached.has(goal); head++) {
    const from = queue[head]!;
    for (const edge of edges[from]!) {
      if (reached.has(edge.to)) continue;
      reached.set(edge.to, { from, edge });
      queue.push(edge.to);
    }
  }
  const path: { from: number; edge: Edge }[] = [];
  for (let step = reached.get(goal); step; step = reached.get(step.from)) path.unshift(step);
  return path;
}
