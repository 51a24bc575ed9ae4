// A reader of the published warehouse in another OS process, as a notebook or a BI tool holds it.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface, type Interface } from 'node:readline';

/**
 * Another OS process (a notebook, a BI tool) that opens `db` read-only and keeps it open, answering
 * one SQL line at a time with its first value.
 */
export async function readerProcess(db: string): Promise<{ value(sql: string): Promise<unknown>; close(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
    import { DuckDBInstance } from '@duckdb/node-api';
    import { createInterface } from 'node:readline';
    const db = await DuckDBInstance.create(${JSON.stringify(db)}, { access_mode: 'READ_ONLY' });
    const c = await db.connect();
    console.log('open');
    for await (const line of createInterface({ input: process.stdin })) {
      try {
        const rows = (await c.runAndReadAll(line)).getRows();
        console.log(JSON.stringify({ value: String(rows[0]?.[0] ?? null) }));
      } catch (e) {
        console.log(JSON.stringify({ error: e.message }));
      }
    }
  `,
    ],
    { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: Interface = createInterface({ input: child.stdout! });
  const next = () => new Promise<string>((resolve) => lines.once('line', resolve));
  const opened = await next();
  if (opened !== 'open') throw new Error(`reader did not open ${db}: ${opened}`);
  return {
    async value(sql) {
      const answer = next();
      child.stdin!.write(`${sql}\n`);
      const parsed = JSON.parse(await answer) as { value?: string; error?: string };
      if (parsed.error) throw new Error(parsed.error);
      return parsed.value;
    },
    async close() {
      child.stdin!.end();
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

/** One value from a reader that opens `db`, reads and closes. */
export async function readOnce(db: string, sql: string): Promise<unknown> {
  const reader = await readerProcess(db);
  try {
    return await reader.value(sql);
  } finally {
    await reader.close();
  }
}

/**
 * An emulator `beforeReply` hook that runs `midRun` before answering the third line-items request after the test
 * set it: the sync is then mid-run, with windows stored before it.
 */
export function midRunHook(): { beforeReply: (request: { route: string }) => Promise<void>; midRun: (() => Promise<void>) | null } {
  let lineItemRequests = 0;
  const hook = {
    midRun: null as (() => Promise<void>) | null,
    beforeReply: async ({ route }: { route: string }) => {
      if (route === 'line-items' && hook.midRun && ++lineItemRequests === 3) await hook.midRun();
    },
  };
  return hook;
}
