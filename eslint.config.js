// Lint: typescript-eslint's type-checked recommended and stylistic rules; formatting is Prettier's.
import js from '@eslint/js';
import globals from 'globals';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

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
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/**/*.js', 'examples/**/*.mjs', 'scripts/**/*.mjs', '*.mjs'], languageOptions: { globals: globals.node } },
  prettier,
);
