/**
 * Descriptions are CommonMark, where the contract's placeholders such as `<namespace>:<id>` read as
 * HTML tags and vanish (Swagger UI shows "Subject, :, e.g. ..."), and a lone `*` (a scope wildcard)
 * may start emphasis. Outside code spans, every word holding a `<name>` placeholder, and every
 * lone `*` or `*:*`, becomes a code span.
 */
export function codeSpanPlaceholders(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) codeSpanPlaceholders(item);
  } else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'example' || k === 'examples' || k === 'default' || k === 'enum') continue;
      if (k === 'description' && typeof v === 'string') (node as Record<string, unknown>)[k] = codeSpans(v);
      else codeSpanPlaceholders(v);
    }
  }
}

export const codeSpans = (markdown: string): string =>
  markdown
    .split('`')
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part
            .replace(/[^\s`(]*<[a-z_]+>[^\s`,;)]*?(?=[.:]?(?:[\s,;)]|$))/g, (word) => `\`${word}\``)
            .replace(/(^|\s)(\*(?::\*)?)(?=[\s,.;]|$)/g, (_, space: string, star: string) => `${space}\`${star}\``),
    )
    .join('`');
