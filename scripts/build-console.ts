// Builds the console (src/console, browser code) into fingerprinted files and a manifest naming
// them, which the server reads (src/http/console.ts). Run by `npm run build`.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { CONSOLE_DIR, MANIFEST, type ConsoleManifest } from '../src/http/console.ts';
import { packageRoot } from '../src/package-root.ts';

export async function buildConsole(outdir: string = CONSOLE_DIR): Promise<ConsoleManifest> {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    entryPoints: [join(packageRoot(), 'src', 'console', 'main.tsx')],
    outdir,
    bundle: true,
    minify: true,
    sourcemap: 'linked',
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning',
  });
  const files = Object.keys(result.metafile.outputs).map((output) => basename(output));
  const script = files.find((file) => file.endsWith('.js'));
  const style = files.find((file) => file.endsWith('.css'));
  if (!script || !style) throw new Error(`the console build made no script or no stylesheet: ${files.join(', ')}`);
  const manifest: ConsoleManifest = { script, style, files };
  writeFileSync(join(outdir, MANIFEST), JSON.stringify(manifest, null, 2));
  return manifest;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const manifest = await buildConsole();
  console.log(`console built into ${CONSOLE_DIR}: ${manifest.script}, ${manifest.style}`);
}
