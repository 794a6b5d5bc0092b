import type { KeyScope } from '../../contract/index.ts';

/** `admin` implies every scope. */
export const hasScope = (granted: readonly string[], required: KeyScope): boolean => granted.includes('admin') || granted.includes(required);

/** The detail of the 403 `insufficient-scope` problem of an operation requiring `scope`. */
export const missingScopeDetail = (scope: KeyScope): string => `this operation needs a key with scope ${scope}`;
