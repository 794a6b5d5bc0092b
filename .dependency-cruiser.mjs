// The import rules that hold the code's shape (docs/development.md#the-dependency-rules), checked by
// dependency-cruiser in `npm run lint`. The layer rules are errors; cycles are warnings until the
// tree has none.
/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'engine-is-pure',
      comment: 'The engine decides from what it is handed: it imports no store, HTTP, authentication or command line.',
      severity: 'error',
      from: { path: '^src/engine/' },
      to: { path: '^src/(store|http|auth|cli)/' },
    },
    {
      name: 'store-knows-no-http',
      comment: 'The store reads and writes the database for any caller: it imports nothing of HTTP.',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'contract-stands-alone',
      comment: 'The contract is the source of truth that server, client and OpenAPI document are built from: it imports nothing of src/.',
      severity: 'error',
      from: { path: '^contract/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-circular',
      comment: 'A cycle means a type or a function lives in the wrong file: move it.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/store/prisma/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
