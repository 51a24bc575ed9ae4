// Ceph's S3 gateway (radosgw) on loopback for the tests and the bucket benchmark. Ceph 16 (Debian 12)
// has no standalone store for radosgw, so this runs the smallest cluster it can use: one monitor, one
// OSD keeping objects in memory, and the gateway, with authentication off inside the cluster and a
// fixed S3 user. Everything (config, data, logs) lives in the directory given; only the processes
// started here are ended. Plain JavaScript so that the benchmark scripts can use it as they are.
/* global fetch, AbortSignal */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, openSync, closeSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const ACCESS_KEY_ID = 'COSTSYNCTESTKEY00000';
export const SECRET_ACCESS_KEY = 'costsync-test-secret-0000000000000000000';

/** A port the kernel had free a moment ago (the daemons bind it themselves). */
async function freePort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  server.close();
  await once(server, 'close');
  return port;
}

/** The cluster's configuration: one of everything, no replication, and nothing that needs a key. */
function cephConf({ dir, fsid, monPort, rgwPort, storeBytes }) {
  return `[global]
fsid = ${fsid}
mon host = [v2:127.0.0.1:${monPort}]
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
keyring = /dev/null
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
mon cluster log file = ${dir}/log/cluster.log
# A single OSD: every pool has one copy, on it.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
# The monitor would stop when the disk under it is nearly full; a test machine's often is.
mon data avail crit = 0
mon data avail warn = 0
ms async op threads = 2

[mon]
mon data = ${dir}/mon
# Pool creation waits for this; the default makes the gateway's first start seconds longer.
paxos propose interval = 0.1

[osd]
osd data = ${dir}/osd
osd objectstore = memstore
memstore device bytes = ${storeBytes}
osd memory target = 939524096
osd op num shards = 1
osd op num threads per shard = 2

[client.rgw]
rgw data = ${dir}/rgw
# tcp_nodelay: the gateway writes an answer's head and body apart, and Nagle's algorithm held the body
# until the client acknowledged the head, which Linux delays by 40 ms: a GET took 48 ms here, now 4.
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw thread pool size = 64
# The gateway asks the monitor for an encrypted session by default, which needs keys.
ms mon client mode = crc
`;
}

/**
 * Starts the gateway with its state in `dir` (which must exist). `storeBytes` caps the in-memory store,
 * which uses about twice the data it holds. Resolves once the gateway answers HTTP.
 * @param {string} dir
 * @param {{ storeBytes?: number, timeoutMs?: number }} [options]
 * @returns {Promise<{ endpoint: string, accessKeyId: string, secretAccessKey: string, stop(): Promise<void> }>}
 */
export async function startRadosgw(dir, { storeBytes = 2 ** 31, timeoutMs = 120_000 } = {}) {
  for (const sub of ['mon', 'osd', 'rgw', 'run', 'log']) mkdirSync(join(dir, sub), { recursive: true });
  const conf = join(dir, 'ceph.conf');
  const [monPort, rgwPort] = [await freePort(), await freePort()];
  const fsid = randomUUID();
  writeFileSync(conf, cephConf({ dir, fsid, monPort, rgwPort, storeBytes }));
  const deadline = Date.now() + timeoutMs;
  /** @type {{ name: string, child: import('node:child_process').ChildProcess, exited: Promise<unknown> }[]} */
  const daemons = [];

  // SIGKILL: the cluster's state goes with its folder, so a clean shutdown keeps nothing (and the gateway
  // takes seconds to drain its connections on SIGTERM).
  const killLeft = () => {
    for (const { child } of daemons) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const stop = async () => {
    killLeft();
    await Promise.all(daemons.map(({ exited }) => exited));
    process.off('exit', killLeft);
  };
  // Should the caller exit without stopping it, the cluster must not outlive it.
  process.on('exit', killLeft);

  /** A cluster command, given what is left of the time allowed; its stdout. */
  const run = (command, args) =>
    new Promise((resolve, reject) => {
      const timeout = Math.max(1, deadline - Date.now());
      execFile(command, ['-c', conf, ...args], { timeout, encoding: 'utf8' }, (error, stdout, stderr) => {
        const why = error?.killed ? `not done in ${timeoutMs} ms` : `${error?.code ?? error?.signal}: ${stderr.trim()}`;
        if (error) reject(new Error(`radosgw could not start: ${command} ${args.join(' ')} failed (${why}; logs in ${dir}/log)`));
        else resolve(stdout);
      });
    });
  /** A daemon in the foreground (so that it is this process's child), its output in the log folder. */
  const launch = (name, command, args) => {
    const out = openSync(join(dir, 'log', `${name}.out`), 'a');
    const child = spawn(command, ['-c', conf, '-f', ...args], { stdio: ['ignore', out, out] });
    closeSync(out);
    const exited = once(child, 'exit');
    daemons.push({ name, child, exited });
    return child;
  };
  /** Rejects when a daemon started so far exits: every later step would only wait for its deadline. */
  const watch = () =>
    Promise.race(
      daemons.map(({ name, exited }) =>
        exited.then(([code, signal]) => {
          throw new Error(`radosgw could not start: its ${name} exited (${code ?? signal}; logs in ${dir}/log)`);
        }),
      ),
    );

  try {
    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, join(dir, 'monmap')]);
    await run('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap'), '--keyring', '/dev/null']);
    launch('mon', 'ceph-mon', ['-i', 'a']);
    const osdUuid = randomUUID();
    const osdId = (await Promise.race([run('ceph', ['--connect-timeout', '30', 'osd', 'new', osdUuid]), watch()])).trim();
    await run('ceph-osd', ['-i', osdId, '--mkfs', '--osd-uuid', osdUuid]);
    launch('osd', 'ceph-osd', ['-i', osdId]);
    // Creating the user creates the gateway's pools and writes to them: it returns once the OSD serves.
    await Promise.race([
      run('radosgw-admin', [
        '-n',
        'client.rgw',
        'user',
        'create',
        '--uid=costsync-test',
        '--display-name=costsync tests',
        `--access-key=${ACCESS_KEY_ID}`,
        `--secret=${SECRET_ACCESS_KEY}`,
      ]),
      watch(),
    ]);
    launch('rgw', 'radosgw', ['-n', 'client.rgw']);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await Promise.race([answers(endpoint, deadline), watch()]);
    return { endpoint, accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Resolves once the gateway answers an anonymous request (with its bucket list or a refusal). */
async function answers(endpoint, deadline) {
  for (;;) {
    try {
      await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`radosgw could not start: nothing answered at ${endpoint} (${String(error)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
