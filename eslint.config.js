// ESLint for Berth: run by `npm run lint` (and so by `npm test`). The rules are the habits the codebase already keeps,
// made checked: no promise left floating or passed where nothing awaits it, no unused variable or import, type-only
// imports spelled `import type` (verbatimModuleSyntax keeps them out of the emitted JS), and relative imports that
// name the `.ts` file itself (tsc rewrites them on emit; tsx and tap load them as written). Unused exports are knip's
// job (knip.jsonc), not ESLint's: ESLint sees one file at a time.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** A relative specifier ("./x", "../x") that does not name a .ts (or .json) file. */
const RELATIVE_WITHOUT_TS = '[source.value=/^[.]/][source.value!=/[.](ts|json)$/]';
const IMPORT_STYLE = 'Import relative modules by their .ts file name (./model.ts), as the rest of the project does.';
const importStyle = ['ImportDeclaration', 'ImportExpression', 'ExportNamedDeclaration', 'ExportAllDeclaration']
  .map((node) => ({ selector: `${node}${RELATIVE_WITHOUT_TS}`, message: IMPORT_STYLE }));

export default defineConfig(
  {
    ignores: ['dist/**', 'coverage/**', '.tap/**', 'node_modules/**', 'openapi/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        // Type-aware rules: each file is checked with the tsconfig that owns it (./tsconfig.json, console/tsconfig.json).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise nobody awaits loses its error (an unhandled rejection) and its ordering.
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a void callback is expected (an event handler, forEach) is a floating promise too.
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', {
        // `_name` marks a parameter a signature requires but this implementation does not read.
        argsIgnorePattern: '^_',
        // `const { key: _omit, ...rest } = x` is how a copy without one key is written.
        ignoreRestSiblings: true,
      }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/consistent-type-exports': 'error',
      // `import { type A }` with only type specifiers leaves `import {} from` (a side-effect import) in the JS.
      '@typescript-eslint/no-import-type-side-effects': 'error',
      // One import statement per module, type specifiers inline (`import { Pipeline, type Decision }`).
      'no-duplicate-imports': 'error',
      'no-restricted-syntax': ['error', ...importStyle],
    },
  },
  {
    // tap queues `t.test(...)` subtests and waits for them (and for t.rejects/t.resolves) itself: awaiting is optional.
    files: ['test/**/*.ts'],
    rules: {
      // Tests read JSON answers (inject's json() is any) and their assertions check the shape.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [
          { from: 'package', package: '@tapjs/test', name: ['test', 'todo', 'skip', 'only'] },
          { from: 'package', package: '@tapjs/asserts', name: ['rejects', 'resolves', 'resolveMatch', 'resolveMatchSnapshot'] },
        ],
      }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
);
