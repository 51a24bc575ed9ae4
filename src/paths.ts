/** Where the package's own files are, from both `src/` (tests) and `dist/` (the CLI). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SQL_DIR = fileURLToPath(new URL('../sql', import.meta.url));

/** costsync's version, as its package.json says: what every command's --version prints. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
