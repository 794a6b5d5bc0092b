import type { KeyScope } from '../../contract/index.ts';

/** `admin` implies every scope. */
export const hasScope = (granted: readonly string[], required: KeyScope): boolean => granted.includes('admin') || granted.includes(required);
