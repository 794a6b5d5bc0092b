import { EVERY_SUBJECT_ID, explainRef, REF_PATTERN, SUBJECT_PATTERN } from '../../contract/index.ts';

export { EVERY_SUBJECT_ID };
import { DomainError } from '../errors.ts';

/** A subject or object, `<namespace>:<id>` split in two. */
export interface Ref {
  ns: string;
  id: string;
}

export function parseRef(value: string, kind: 'subject' | 'object'): Ref {
  if (!(kind === 'subject' ? SUBJECT_PATTERN : REF_PATTERN).test(value)) {
    throw new DomainError(`invalid-${kind}`, `${kind} ${JSON.stringify(value.slice(0, 300))} ${explainRef(value)}`);
  }
  const colon = value.indexOf(':');
  return { ns: value.slice(0, colon), id: value.slice(colon + 1) };
}

/**
 * A relationship: `subject` (or, in a check, a group it is a direct member of) holds `relation` on
 * `object`. A grant written or held, and a check asked, are all one.
 */
export interface Triple {
  subject: Ref;
  relation: string;
  object: Ref;
}

export const formatRef = (ref: Ref): string => `${ref.ns}:${ref.id}`;

export const AGENT_NAMESPACE = 'agent';
export const USER_NAMESPACE = 'user';
/** Namespaces every tenant has; both are open. */
export const BUILTIN_NAMESPACES = [AGENT_NAMESPACE, USER_NAMESPACE] as const;
/** The relation whose grants make their subject a member of the object (one level only). */
export const MEMBER_RELATION = 'member';
