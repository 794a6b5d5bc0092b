/** A typed array of `length` with the first `used` entries of `old` (the rest zero). */
export function resized<T extends Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer> | Uint8Array<ArrayBuffer>>(
  old: T,
  length: number,
  used: number,
): T {
  const into = new (old.constructor as new (length: number) => T)(length);
  into.set(old.subarray(0, used));
  return into;
}
