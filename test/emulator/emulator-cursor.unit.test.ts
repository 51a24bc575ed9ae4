import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../../src/emulator/cursor.js';

const payload = { s: '2025-06-01', e: '2025-06-30', k: 'abc', d: 20_000, i: 5, t: 1 };

describe('CursorCodec', () => {
  it('round-trips its own cursors', () => {
    const codec = new CursorCodec('secret');
    expect(codec.decode(codec.encode(payload))).toEqual({ ok: true, payload });
  });

  it('refuses a cursor whose body was edited', () => {
    const codec = new CursorCodec('secret');
    const cursor = codec.encode(payload);
    const [body, sig] = cursor.split('.');
    const edited = Buffer.from(JSON.stringify({ ...payload, i: 999 })).toString('base64url');
    expect(codec.decode(`${edited}.${sig}`).ok).toBe(false);
    expect(codec.decode(`${body}.${sig!.slice(1)}x`).ok).toBe(false);
    expect(codec.decode('garbage').ok).toBe(false);
  });

  it('refuses a cursor from another server', () => {
    const cursor = new CursorCodec('one').encode(payload);
    expect(new CursorCodec('two').decode(cursor).ok).toBe(false);
  });
});
