/**
 * Opaque line-item cursors: a position plus the query it belongs to, signed with a per-server
 * secret. A cursor edited by hand, made by another server, or sent with other dates is refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface CursorPayload {
  /** start_date and end_date of the query the cursor continues. */
  s: string;
  e: string;
  /** Fingerprint of the asking key's workspace; a cursor is not usable in another workspace. */
  k: string;
  /** Position: day number and slot index of the next record. */
  d: number;
  i: number;
  /** Issue time (epoch ms), for expiry. */
  t: number;
}

export type CursorCheck = { ok: true; payload: CursorPayload } | { ok: false; reason: string };

export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(payload: CursorPayload): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  decode(cursor: string): CursorCheck {
    const dot = cursor.indexOf('.');
    if (dot <= 0) return { ok: false, reason: 'cursor is not one this server issued' };
    const body = cursor.slice(0, dot);
    const sig = Buffer.from(cursor.slice(dot + 1));
    const expected = Buffer.from(this.sign(body));
    if (sig.length !== expected.length || !timingSafeEqual(sig, expected)) {
      return { ok: false, reason: 'cursor was altered or issued by another server' };
    }
    try {
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CursorPayload;
      return { ok: true, payload };
    } catch {
      return { ok: false, reason: 'cursor is not one this server issued' };
    }
  }

  private sign(body: string): string {
    return createHmac('sha256', this.secret).update(body).digest('base64url').slice(0, 22);
  }
}
