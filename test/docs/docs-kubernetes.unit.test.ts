import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { resolveSyncConfig } from '../../src/config.js';

interface Manifest {
  apiVersion: string;
  kind: string;
  data?: Record<string, string>;
  spec: Record<string, unknown>;
}

const documents = parseAllDocuments(readFileSync(new URL('../../docs/kubernetes-indexed-job.yaml', import.meta.url), 'utf8')).map((d) => {
  expect(d.errors).toEqual([]);
  return d.toJS() as Manifest;
});

/** The spec of the Job the CronJob makes. */
function jobSpec(): Record<string, unknown> & { template: { spec: { containers: { command: string[] }[] } } } {
  const cron = documents.find((d) => d.kind === 'CronJob')!;
  return (cron.spec.jobTemplate as { spec: ReturnType<typeof jobSpec> }).spec;
}

describe('docs/kubernetes-indexed-job.yaml', () => {
  it('is a batch/v1 Indexed Job whose completions, parallelism and --shard-count agree', () => {
    // A nightly CronJob making the Indexed Job; Forbid keeps two nights (and two layouts) from overlapping.
    const cron = documents.find((d) => d.kind === 'CronJob')!;
    expect(cron.apiVersion).toBe('batch/v1');
    expect(cron.spec.concurrencyPolicy).toBe('Forbid');
    const spec = jobSpec();
    expect(spec.completionMode).toBe('Indexed');
    expect(typeof spec.completions).toBe('number');
    expect(spec.parallelism).toBe(spec.completions);
    const command = spec.template.spec.containers[0]!.command;
    expect(command).toContain('sync');
    expect(command[command.indexOf('--shard-count') + 1]).toBe(String(spec.completions));
    expect(command).not.toContain('--shard');
  });

  it("its command and config file resolve, in each of its pods, to that shard's own warehouse and state and a part of the sources, together all of them", () => {
    const spec = jobSpec();
    const command = spec.template.spec.containers[0]!.command;
    const flags: Record<string, string> = {};
    for (let i = command.indexOf('sync') + 1; i < command.length; i += 2) flags[command[i]!.replace(/^--/, '')] = command[i + 1]!;
    const configMap = documents.find((d) => d.kind === 'ConfigMap')!;
    const file = JSON.parse(configMap.data!['costsync.config.json']!) as { sources: { name: string }[] } & Record<string, unknown>;
    const { sources: fileSources, ...values } = file;
    const { config: _config, ...settings } = flags;
    const seen: string[] = [];
    for (let index = 0; index < Number(spec.completions); index++) {
      const config = resolveSyncConfig({
        flags: settings,
        env: { JOB_COMPLETION_INDEX: String(index) },
        file: values,
        fileSources,
        nowMs: Date.parse('2026-01-01T00:00:00Z'),
        readKeyFile: (path) => `key-of-${path.split('/').pop()}`,
      });
      expect(config.db).toBe(`/data/costs-${index + 1}.duckdb`);
      expect(config.stateDir).toBe(`/data/state-${index + 1}`);
      seen.push(...config.sources!.map((s) => s.name));
    }
    expect(seen.sort()).toEqual(fileSources.map((s) => s.name).sort());
  });
});
