import { defineConfig } from 'prisma/config';
import { fileURLToPath } from 'node:url';

// `prisma generate` runs offline: it needs neither a database nor the native schema engine,
// but Prisma 7 insists on a URL and tries to download the engine unless one is named.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= fileURLToPath(import.meta.url);

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/grantd' },
});
