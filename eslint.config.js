// Lint: typescript-eslint's type-checked recommended and stylistic rules; formatting is Prettier's.
import js from '@eslint/js';
import globals from 'globals';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';
import vitest from '@vitest/eslint-plugin';

export default tseslint.config(
  {
    ignores: ['dist/', 'packages/client/dist/', 'generated/', 'src/store/prisma/', 'bench-scratch/', 'test-artifacts/', '.stryker-tmp/', 'reports/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Async methods that do not await implement async interfaces (oidc-provider's adapter, Checker,
      // test doubles): their callers await them and a thrown error must become a rejection.
      '@typescript-eslint/require-await': 'off',
      // An empty string is unset (an environment variable, a form field): `||` says so on strings.
      '@typescript-eslint/prefer-nullish-coalescing': ['error', { ignorePrimitives: { string: true } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Tests read responses as supertest gives them (`any`) and assert on their shape; typing each
    // body first would restate the contract the tests check.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // @vitest/eslint-plugin's recommended rules: a test must check something, every time: no focused or
    // skipped tests, no expect that a condition or a catch can pass by, an expect (or a helper that
    // asserts) in each test, valid titles and expects.
    files: ['test/**/*.ts'],
    ...vitest.configs.recommended,
    rules: {
      ...vitest.configs.recommended.rules,
      'vitest/no-disabled-tests': 'error',
      // The suite's assertion helpers (each calls expect), supertest's .expect(status) and fast-check's assert.
      'vitest/expect-expect': ['error', { assertFunctionNames: ['expect*', 'assertProperty', 'fc.assert', '**.expect'] }],
      // A check in a beforeAll (the set-up's own request answered 201) fails every test of its block, as it should.
      'vitest/no-standalone-expect': 'off',
      // vitest's expect takes a message second.
      'vitest/valid-expect': ['error', { maxArgs: 2 }],
    },
  },
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/**/*.js', 'examples/**/*.mjs', 'scripts/**/*.mjs', '*.mjs'], languageOptions: { globals: globals.node } },
  prettier,
);
