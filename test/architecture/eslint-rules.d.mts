import type { ESLint } from 'eslint';

/** The entries of the progress writers' rule (test/architecture/eslint-rules.mjs). */
export const PROGRESS_WRITERS: readonly { writes: string; names: readonly string[]; sql?: string; allowed: readonly string[] }[];
declare const plugin: ESLint.Plugin;
export default plugin;
