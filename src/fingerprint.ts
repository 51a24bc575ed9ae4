/** A short, stable, non-reversible name for an API key, for state files, limiters and cursors. */
import { createHash } from 'node:crypto';

export function keyFingerprint(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex').slice(0, 12);
}
