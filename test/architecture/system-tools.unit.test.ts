import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ToolsMissing, chromiumPath, ensureTools, installCommand, missing, needs, onPath, plan } from '../system/tools.js';

const ALL = needs({});
const having =
  (...absent: string[]) =>
  (command: string) =>
    !absent.includes(command);

describe('the system programs the tests need', () => {
  it('names a Debian package for radosgw and the cluster under it, promtool, faketime and Chromium', () => {
    expect(ALL.map((need) => need.pkg)).toEqual(['radosgw', 'ceph-mon', 'ceph-osd', 'prometheus', 'faketime', 'chromium']);
    expect(ALL.flatMap((need) => need.commands)).toEqual(
      expect.arrayContaining(['radosgw', 'radosgw-admin', 'ceph', 'ceph-mon', 'monmaptool', 'ceph-osd', 'promtool', 'faketime']),
    );
  });

  it('looks for Chromium where the report test does', () => {
    expect(chromiumPath({})).toBe('/usr/bin/chromium');
    expect(needs({ COSTSYNC_CHROMIUM: '/opt/chrome/chrome' }).find((need) => need.pkg === 'chromium')!.commands).toEqual([
      '/opt/chrome/chrome',
    ]);
  });

  it('finds a package missing when any one of its commands is', () => {
    expect(missing(ALL, having())).toEqual([]);
    expect(missing(ALL, having('monmaptool', 'promtool')).map((need) => need.pkg)).toEqual(['ceph-mon', 'prometheus']);
  });
});

describe('what to do about missing programs', () => {
  const lacking = missing(ALL, having('radosgw', 'faketime'));

  it('nothing, when nothing is missing', () => {
    expect(plan([], { as: 'none', apt: false })).toEqual({ kind: 'ready' });
  });

  it('as root: apt-get update, then one install of every missing package, non-interactive', () => {
    expect(plan(lacking, { as: 'root', apt: true })).toEqual({
      kind: 'install',
      commands: [
        ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'update', '-qq'],
        ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', 'radosgw', 'faketime'],
      ],
    });
  });

  it('with passwordless sudo: the same through sudo -n, which never asks', () => {
    const next = plan(lacking, { as: 'sudo', apt: true });
    expect(next.kind === 'install' && next.commands.map((argv) => argv.slice(0, 3))).toEqual([
      ['sudo', '-n', 'env'],
      ['sudo', '-n', 'env'],
    ]);
  });

  it('otherwise stops: one line a missing package, naming it and the command that installs it', () => {
    expect(plan(lacking, { as: 'none', apt: true })).toEqual({
      kind: 'stop',
      lines: [
        'The tests need system programs that are missing (installing them needs root or passwordless sudo):',
        "  missing radosgw (radosgw, radosgw-admin, ceph: Ceph's S3 gateway, for the bucket tests): sudo apt-get update && sudo apt-get install -y radosgw",
        "  missing faketime (faketime: the lease test's clock behind): sudo apt-get update && sudo apt-get install -y faketime",
      ],
    });
  });

  it('stops as well as root with no apt-get, or once apt-get has run and left some missing', () => {
    const noApt = plan(lacking, { as: 'root', apt: false });
    expect(noApt.kind === 'stop' && noApt.lines).toEqual([
      'The tests need system programs that are missing (no apt-get here: these are the Debian/Ubuntu packages):',
      expect.stringMatching(/^ {2}missing radosgw .*: apt-get update && apt-get install -y radosgw$/),
      expect.stringMatching(/^ {2}missing faketime .*: apt-get update && apt-get install -y faketime$/),
    ]);
    const after = plan(lacking, { as: 'sudo', apt: true }, true);
    expect(after.kind === 'stop' && after.lines[0]).toBe('The tests need system programs that are missing (apt-get did not install them):');
  });

  it('writes the install command a person runs', () => {
    expect(installCommand(['prometheus'], false)).toBe('sudo apt-get update && sudo apt-get install -y prometheus');
    expect(installCommand(['prometheus', 'faketime'], true)).toBe('apt-get update && apt-get install -y prometheus faketime');
  });
});

describe('looking the programs up', () => {
  it('finds an executable by name on PATH, or by its path; not a file that cannot run', () => {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-tools-'));
    try {
      writeFileSync(join(dir, 'runs'), '#!/bin/sh\n', { mode: 0o755 });
      writeFileSync(join(dir, 'plain'), '', { mode: 0o644 });
      expect([onPath('runs', `/nonexistent:${dir}`), onPath('plain', dir), onPath('runs', '/nonexistent')]).toEqual([true, false, false]);
      expect([onPath(join(dir, 'runs'), ''), onPath(join(dir, 'plain'), '')]).toEqual([true, false]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes when everything is found, without asking for any privilege', () => {
    expect(() => ensureTools(() => true)).not.toThrow();
  });

  it('the error of a stop is its lines, with no stack', () => {
    const error = new ToolsMissing(['a', '  b']);
    expect([error.message, error.stack]).toEqual(['a\n  b', 'a\n  b']);
  });
});
