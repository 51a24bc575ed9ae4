/** Where the package's own files are, from both `src/` (tests) and `dist/` (the CLI). */
import { fileURLToPath } from 'node:url';

export const SQL_DIR = fileURLToPath(new URL('../sql', import.meta.url));
