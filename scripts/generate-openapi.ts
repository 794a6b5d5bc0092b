import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument } from './openapi-document.ts';
import { packageRoot } from '../src/package-root.ts';

const file = join(packageRoot(), 'generated', 'openapi.json');
writeFileSync(file, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${file}\n`);
