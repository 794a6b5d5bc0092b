import type { RelationDefinitions } from '../../src/engine/schema.ts';
import { MAX_ARROW_DEPTH } from '../../src/engine/schema-tables.ts';

/**
 * The stall test's tenants for the model's rules and public grants (docs/model.md#requires-and-excludes,
 * docs/model.md#public-grants): their namespaces and grants, which stall.test.ts writes and attacks.
 * The shapes make the rule evaluator do the most it may within one check's work budget: an exclusion
 * through an arrow walks each of thousands of parents on its own, a requirement through arrows is
 * evaluated object by object up a chain, listings of a ruled relation check their candidates one by
 * one, and a wildcard in thousands of groups makes every subject of its namespace carry them.
 */

/** A grant as the stall test writes it. */
export type GrantTriple = readonly [subject: string, relation: string, object: string];

export interface StallTenant {
  namespaces: { name: string; relations: RelationDefinitions | null }[];
  grants: GrantTriple[];
}

/** Parents of doc:fan (and doc:pub), each walked for `blocked` on its own by the exclusion `parent->blocked`. */
const RULED_FAN = 3_000;
/** Parents of doc:fanover: reading them and walking each passes the work budget (check-too-complex). */
const RULED_FAN_OVER = 8_000;
/** The roots above the parents (`blocked` is inherited down from them). */
const ROOTS = 100;
/** Documents team:crowd views, each under one of doc:fan's parents: candidates of a listing on which the base holds. */
const CROWD_DOCS = 5_000;
/** Users, each a member of team:crowd (so the viewer of doc:fan and doc:c*): the candidates of a subjects listing. */
const CROWD = 20_000;
/** Objects per level of the ruled chain doc:l0_* <- ... <- doc:l16_*, each the parent of every object of the level below. */
export const RULED_CHAIN_WIDTH = 20;
/** Teams the wildcard `person:*` is a member of: every person's check has them among its groups. */
export const PUBLIC_TEAMS = 5_000;
/** Named persons (candidates of the public subjects listing). */
const PERSONS = 5_000;

/**
 * `open`: a viewer, unless `blocked` on a parent (each parent's own walk up to its root). `trusted`:
 * ruled at every step of a chain of arrows (an owner there, or trusted on a parent; never where
 * blocked). `vetted`: a viewer who also holds `trusted` on some parent, the requirement that goes up
 * the chain object by object.
 */
export const RULED_DOCUMENT: RelationDefinitions = {
  parent: {},
  owner: {},
  viewer: { includes: ['owner'] },
  blocked: { includes: ['parent->blocked'] },
  open: { includes: ['viewer'], excludes: ['parent->blocked'] },
  trusted: { includes: ['owner', 'parent->trusted'], excludes: ['blocked'] },
  vetted: { includes: ['viewer'], requires: ['parent->trusted'] },
};

/**
 * The rules tenant. user:u<i> (CROWD of them) are members of team:crowd, which views doc:fan,
 * doc:fanover, doc:c<i> and doc:l0_1; user:bob is besides in team:blk, blocked on the last root (so
 * excluded from doc:fan, after every parent is walked). doc:pub is viewed by `user:*`, under the same
 * parents as doc:fan. user:deep views doc:l<k>_0 on every level and owns doc:l16_0, the far end of
 * the ruled chain. user:late views every doc:c<i>, on none of which it is `vetted` (no one owns what
 * is above them): a listing of its vetted documents checks every candidate of the namespace.
 */
export function rulesTenant(): StallTenant {
  const grants: GrantTriple[] = [];
  for (let i = 0; i < CROWD; i++) grants.push([`user:u${i}`, 'member', 'team:crowd']);
  grants.push(['user:bob', 'member', 'team:crowd'], ['user:bob', 'member', 'team:blk'], ['team:blk', 'blocked', `doc:root${ROOTS - 1}`]);
  for (let r = 0; r < ROOTS - 1; r++) grants.push([`team:t${r}`, 'blocked', `doc:root${r}`]);
  for (let i = 0; i < RULED_FAN_OVER; i++) {
    grants.push([`doc:fp${i}`, 'parent', 'doc:fanover'], [`doc:root${i % ROOTS}`, 'parent', `doc:fp${i}`]);
    if (i < RULED_FAN) grants.push([`doc:fp${i}`, 'parent', 'doc:fan'], [`doc:fp${i}`, 'parent', 'doc:pub']);
  }
  grants.push(['team:crowd', 'viewer', 'doc:fan'], ['team:crowd', 'viewer', 'doc:fanover'], ['user:*', 'viewer', 'doc:pub']);
  for (let i = 0; i < CROWD_DOCS; i++) grants.push(['team:crowd', 'viewer', `doc:c${i}`], [`doc:fp${i % RULED_FAN}`, 'parent', `doc:c${i}`]);
  for (let level = 0; level < MAX_ARROW_DEPTH; level++) {
    for (let a = 0; a < RULED_CHAIN_WIDTH; a++)
      for (let b = 0; b < RULED_CHAIN_WIDTH; b++) grants.push([`doc:l${level + 1}_${a}`, 'parent', `doc:l${level}_${b}`]);
  }
  for (let level = 0; level <= MAX_ARROW_DEPTH; level++) grants.push(['user:deep', 'viewer', `doc:l${level}_0`]);
  grants.push(['team:crowd', 'viewer', 'doc:l0_1']);
  for (let i = 0; i < CROWD_DOCS; i++) grants.push(['user:late', 'viewer', `doc:c${i}`]);
  grants.push(['user:deep', 'owner', `doc:l${MAX_ARROW_DEPTH}_0`]);
  return {
    // `user` (and `agent`) every tenant has from its creation.
    namespaces: [
      { name: 'team', relations: null },
      { name: 'doc', relations: RULED_DOCUMENT },
    ],
    grants,
  };
}

/**
 * The public tenant: `person:*` is a member of PUBLIC_TEAMS teams, team:p<i> views doc:d<i>, and
 * `person:*` views doc:all directly; PERSONS named persons view a document each (the candidates of a
 * subjects listing). Any person, named or not, carries the wildcard's teams into its checks.
 */
export function publicTenant(): StallTenant {
  const grants: GrantTriple[] = [['person:*', 'viewer', 'doc:all']];
  for (let i = 0; i < PUBLIC_TEAMS; i++) grants.push(['person:*', 'member', `team:p${i}`], [`team:p${i}`, 'viewer', `doc:d${i}`]);
  for (let i = 0; i < PERSONS; i++) grants.push([`person:n${i}`, 'viewer', `doc:n${i}`]);
  return {
    namespaces: [
      { name: 'person', relations: null },
      { name: 'team', relations: null },
      { name: 'doc', relations: RULED_DOCUMENT },
    ],
    grants,
  };
}
