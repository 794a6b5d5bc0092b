// node examples/client-quickstart.mjs   (with GRANTD_KEY set, and GRANTD_URL if not http://localhost:8080)
// It leaves the tenant as it found it: what it creates, it removes at its end, even when a step fails.
import { createClient, ProblemError } from 'grantd/client';

const grantd = createClient({ apiKey: process.env.GRANTD_KEY, baseUrl: process.env.GRANTD_URL ?? 'http://localhost:8080' });

const namespace = `quickstart_${Date.now()}`;
const grants = ['a', 'b', 'c'].map((id) => ({ subject: 'user:alice', relation: 'owner', object: `${namespace}:${id}` }));
await grantd.namespaces.create({ name: namespace, relations: { owner: {}, viewer: { includes: ['owner'] } } });
try {
  await grantd.grants.batch({ writes: grants });

  const { allowed } = await grantd.check({ subject: 'user:alice', relation: 'viewer', object: `${namespace}:a` });
  console.log('alice may view a:', allowed);

  const ids = [];
  for await (const id of grantd.objects.iterate({ namespace, subject: 'user:alice', relation: 'viewer', limit: 2 })) ids.push(id);
  console.log('alice views:', ids.join(', '));

  try {
    await grantd.check({ subject: 'user:alice', relation: 'viewer', object: 'nowhere:x' }, { timeoutMs: 2000 });
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    console.log('problem:', error.status, error.type);
  }
} finally {
  // The grants first: a namespace that grants still name cannot be deleted (409 namespace-in-use).
  await grantd.grants.batch({ deletes: grants });
  await grantd.namespaces.delete(namespace);
}
