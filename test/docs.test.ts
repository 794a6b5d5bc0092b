import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testModelFile } from '../src/cli/model-test.ts';
import { packageRoot } from '../src/package-root.ts';

// The documentation holds together: every page of docs/ is reachable from its index, every link of
// README.md, bench/README.md and docs/ leads to a file that exists (and a heading of it, when it
// names one), and every `docs/<page>.md#<heading>` or `bench/README.md#<heading>` that code and
// tests cite names a page and a heading that exist.

const root = packageRoot();
const read = (path: string): string => readFileSync(path, 'utf8');
const docsDir = join(root, 'docs');
const pages = readdirSync(docsDir)
  .filter((name) => name.endsWith('.md'))
  .map((name) => join(docsDir, name));

/** The code and tests that may cite the documentation (not Prisma's generated client). */
function sourcesIn(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === join(root, 'src', 'store', 'prisma') ? [] : sourcesIn(path);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [path] : [];
  });
}
const sources = ['src', 'contract', 'test', 'scripts', 'bench'].flatMap((dir) => sourcesIn(join(root, dir)));

/** The text of a Markdown page without its code: fenced blocks and inline code hold no links. */
const prose = (markdown: string): string => markdown.replace(/^```[^]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to hyphens; repeats get -1, -2... */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of markdown.replace(/^```[^]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The local links of a page, resolved: the file they lead to and the anchor they name, if any. */
function linksOf(page: string): { target: string; file: string; anchor: string | null }[] {
  const links = [];
  for (const [, target] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // http:, https:, mailto:
    const [path, anchor = null] = target!.split('#') as [string, string | undefined];
    links.push({ target: target!, file: path === '' ? page : resolve(dirname(page), decodeURIComponent(path)), anchor });
  }
  return links;
}

describe('the documentation', () => {
  it('reaches every page of docs/ from docs/README.md', () => {
    const reached = new Set<string>();
    const queue = [join(docsDir, 'README.md')];
    while (queue.length > 0) {
      const page = queue.pop()!;
      if (reached.has(page)) continue;
      reached.add(page);
      for (const { file } of linksOf(page)) if (file.startsWith(docsDir) && file.endsWith('.md') && existsSync(file)) queue.push(file);
    }
    expect(pages.filter((page) => !reached.has(page)).map((page) => relative(root, page))).toEqual([]);
  });

  it('has no broken link in README.md, bench/README.md or docs/', () => {
    const broken: string[] = [];
    for (const page of [join(root, 'README.md'), join(root, 'bench', 'README.md'), ...pages]) {
      for (const { target, file, anchor } of linksOf(page)) {
        const where = `${relative(root, page)}: ${target}`;
        if (!existsSync(file)) broken.push(`${where} (no such file)`);
        else if (anchor !== null && (!statSync(file).isFile() || !file.endsWith('.md') || !anchorsOf(read(file)).has(anchor))) {
          broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('has every page and heading that code and tests cite', () => {
    const cited = new RegExp(String.raw`\b(docs/[a-z-]+\.md|bench/README\.md)(?:#([a-z0-9_-]+))?`, 'g');
    const broken: string[] = [];
    for (const source of sources) {
      for (const [citation, page, anchor] of read(source).matchAll(cited)) {
        const file = join(root, page!);
        const where = `${relative(root, source)}: ${citation}`;
        if (!existsSync(file)) broken.push(`${where} (no such page)`);
        else if (anchor !== undefined && !anchorsOf(read(file)).has(anchor)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(sources.length).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it('is cited by the code rather than a file the repository does not hold', () => {
    const missing = ['API', 'md'].join('.');
    expect(existsSync(join(root, missing))).toBe(false);
    expect(sources.filter((source) => read(source).includes(missing)).map((source) => relative(root, source))).toEqual([]);
  });

  it('shows in docs/model.md#model-files a model file whose assertions hold (grantd test)', async () => {
    const section = read(join(docsDir, 'model.md')).split('## Model files')[1]!;
    const yaml = /^```yaml\n([^]*?)^```/m.exec(section)![1]!;
    const file = join(mkdtempSync(join(tmpdir(), 'grantd-docs-')), 'model.yaml');
    writeFileSync(file, yaml);
    const report = await testModelFile(file);
    expect(report.failures).toEqual([]);
    expect(report.assertions).toBe(3);
  });
});
