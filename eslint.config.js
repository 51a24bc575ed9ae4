// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import costsync from './test/architecture/eslint-rules.mjs';

/**
 * typescript-eslint's type-aware recommended rules; formatting is Prettier's (`npm run lint` runs both).
 * Tests read JSON from processes and files, so the rules about `any` flowing around are off there.
 */
export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test-artifacts/', 'state/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { project: ['./tsconfig.test.json'], tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // A caught error is `unknown`; rethrowing it as it came is right.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      // Methods of an interface that returns promises are async whether or not one implementation awaits.
      '@typescript-eslint/require-await': 'off',
      // Rows of DuckDB and parsed JSON are `unknown` by type and strings by then; String(value) is meant.
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // The architecture's rules (test/architecture/eslint-rules.mjs); `npm test` runs them too.
    files: ['src/**/*.ts', 'src/**/*.cts'],
    plugins: { costsync },
    rules: {
      'costsync/one-writer': 'error',
      'costsync/coded-errors': 'error',
      'costsync/async-local-storage-at-module-level': 'error',
    },
  },
  // The emulator's errors are its HTTP replies.
  { files: ['src/emulator/**/*.ts'], rules: { 'costsync/coded-errors': 'off' } },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/unbound-method': 'off',
      // A process's output is gathered as `text += chunk`.
      '@typescript-eslint/restrict-plus-operands': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        Buffer: 'readonly',
        performance: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URLSearchParams: 'readonly',
      },
    },
  },
);
