/** Short, stable, non-reversible names: of an API key (state files, limiters, cursors), and ids derived from text. */
import { createHash } from 'node:crypto';

/** The first `length` hex digits of the SHA-256 of `text`. Pure. */
export function shortHash(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

export function keyFingerprint(apiKey: string): string {
  return shortHash(apiKey, 12);
}

/** A stable id for an event (a notification's), from what identifies it: the same parts, the same id. Pure. */
export function eventId(...parts: string[]): string {
  return shortHash(parts.join(':'), 32);
}
