/**
 * The answer of a read that finds nothing: one frozen list for every such answer (no list
 * allocated per read on paths that run for each pair of a walk), never written.
 */
export const NONE: readonly never[] = Object.freeze([]);
