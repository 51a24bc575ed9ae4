/**
 * The programs the tests run that npm does not bring: Ceph's radosgw (the bucket tests' S3 server),
 * Prometheus's promtool, faketime and Chromium. When one is missing, the run installs it with apt if
 * this user may (root, or sudo without a password), or stops naming the command that would. What to do
 * is decided by the pure functions here; `ensureTools` only looks and runs apt.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** A Debian/Ubuntu package, the commands the tests take from it, and what needs them. */
export interface Need {
  pkg: string;
  commands: string[];
  neededBy: string;
}

/** Where the report test looks for Chromium (it names the same variable). */
export const chromiumPath = (env: NodeJS.ProcessEnv = process.env) => env.COSTSYNC_CHROMIUM ?? '/usr/bin/chromium';

export function needs(env: NodeJS.ProcessEnv = process.env): Need[] {
  return [
    { pkg: 'radosgw', commands: ['radosgw', 'radosgw-admin', 'ceph'], neededBy: "Ceph's S3 gateway, for the bucket tests" },
    { pkg: 'ceph-mon', commands: ['ceph-mon', 'monmaptool'], neededBy: "the monitor of radosgw's one-node cluster" },
    { pkg: 'ceph-osd', commands: ['ceph-osd'], neededBy: "the object store of radosgw's one-node cluster" },
    { pkg: 'prometheus', commands: ['promtool'], neededBy: 'promtool, which checks the metrics file' },
    { pkg: 'faketime', commands: ['faketime'], neededBy: "the lease test's clock behind" },
    { pkg: 'chromium', commands: [chromiumPath(env)], neededBy: "the report's browser test" },
  ];
}

/** The needs of which some command is not found. */
export function missing(all: Need[], found: (command: string) => boolean): Need[] {
  return all.filter((need) => !need.commands.every(found));
}

/** How this user may install: as root, through `sudo -n`, or not at all; and whether apt-get is there. */
export interface Access {
  as: 'root' | 'sudo' | 'none';
  apt: boolean;
}

export type Plan = { kind: 'ready' } | { kind: 'install'; commands: string[][] } | { kind: 'stop'; lines: string[] };

/** The exact shell command a person runs to install `pkgs`: through sudo unless they are root. */
export function installCommand(pkgs: string[], asRoot: boolean): string {
  const sudo = asRoot ? '' : 'sudo ';
  return `${sudo}apt-get update && ${sudo}apt-get install -y ${pkgs.join(' ')}`;
}

/**
 * What to do about the missing needs: nothing, run apt (argument lists), or stop with one line a package.
 * `afterInstall`: apt already ran and these are still missing.
 */
export function plan(lacking: Need[], access: Access, afterInstall = false): Plan {
  if (lacking.length === 0) return { kind: 'ready' };
  if (access.as !== 'none' && access.apt && !afterInstall) {
    // `env` carries the variable through sudo, which would otherwise drop it.
    const prefix = access.as === 'sudo' ? ['sudo', '-n', 'env'] : ['env'];
    const apt = [...prefix, 'DEBIAN_FRONTEND=noninteractive', 'apt-get'];
    return {
      kind: 'install',
      commands: [
        [...apt, 'update', '-qq'],
        [...apt, 'install', '-y', '-qq', ...lacking.map((need) => need.pkg)],
      ],
    };
  }
  const why = afterInstall
    ? 'apt-get did not install them'
    : !access.apt
      ? 'no apt-get here: these are the Debian/Ubuntu packages'
      : 'installing them needs root or passwordless sudo';
  return {
    kind: 'stop',
    lines: [
      `The tests need system programs that are missing (${why}):`,
      ...lacking.map(
        (need) =>
          `  missing ${need.pkg} (${need.commands.join(', ')}: ${need.neededBy}): ${installCommand([need.pkg], access.as === 'root')}`,
      ),
    ],
  };
}

/** Whether `command` runs: a path that is executable, or a name found on PATH. */
export function onPath(command: string, path = process.env.PATH ?? ''): boolean {
  const candidates = command.includes('/') ? [command] : path.split(delimiter).map((dir) => join(dir || '.', command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function access(): Access {
  const apt = onPath('apt-get');
  if (process.getuid?.() === 0) return { as: 'root', apt };
  const sudo = onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  return { as: sudo ? 'sudo' : 'none', apt };
}

/** Installs what is missing when allowed; otherwise throws, the message being the lines to show. */
export function ensureTools(found: (command: string) => boolean = (command) => onPath(command)): void {
  const lacking = missing(needs(), found);
  if (lacking.length === 0) return;
  const how = access();
  let next = plan(lacking, how);
  if (next.kind === 'install') {
    process.stderr.write(`Installing with apt-get what the tests need: ${lacking.map((need) => need.pkg).join(' ')}\n`);
    for (const [command, ...args] of next.commands) {
      if (spawnSync(command!, args, { stdio: ['ignore', 'inherit', 'inherit'] }).status !== 0) break;
    }
    next = plan(missing(needs(), found), how, true);
  }
  if (next.kind === 'stop') throw new ToolsMissing(next.lines);
}

/** Missing programs: the message is the lines to show, with no stack (there is no bug to locate). */
export class ToolsMissing extends Error {
  constructor(lines: string[]) {
    super(lines.join('\n'));
    this.name = 'ToolsMissing';
    this.stack = this.message;
  }
}
