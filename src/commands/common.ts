/** What the commands share: the connection options, their IO, the configuration and the logger. */
import type { Argv } from 'yargs';
import { readConfigFile, resolveSyncConfig, type SyncConfig } from '../config.js';
import { SETTINGS, settingOptions, type SettingName } from '../settings.js';
import { ConfigError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';

/** The options every command that talks to the API or the warehouse takes (settings.ts). */
export function connectionOptions(yargs: Argv): Argv {
  return settingOptions(yargs, ['connection']);
}

export interface CommandIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  isTTY: boolean;
  now: () => number;
  /** The terminal's width, when stdout is one (for text that wraps). */
  columns?: number | undefined;
}

export const processIo = (): CommandIo => ({
  env: process.env,
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  isTTY: Boolean(process.stderr.isTTY),
  now: () => Date.now(),
  columns: process.stdout.columns,
});

/** The settings given as flags, by name, leaving out what was not given. */
export function flagsOf(args: Record<string, unknown>): Partial<Record<SettingName, unknown>> {
  const flags: Partial<Record<SettingName, unknown>> = {};
  for (const name of SETTINGS) if (args[name] !== undefined) flags[name] = args[name];
  return flags;
}

export function loadConfig(args: Record<string, unknown>, io: CommandIo, needsApi = true): SyncConfig {
  const file = readConfigFile(args.config as string | undefined);
  return resolveSyncConfig({ flags: flagsOf(args), env: io.env, file: file.values, fileSources: file.sources, nowMs: io.now() }, needsApi);
}

/** Commands that talk to one workspace (push, check) need one source: `--source NAME` when the config names several. */
export function oneSource(config: SyncConfig, command: string): SyncConfig & { sourceName: string } {
  const sources = config.sources ?? [];
  if (sources.length > 1) {
    throw new ConfigError(`The config file names ${sources.length} sources (${sources.map((s) => s.name).join(', ')}); ${command} works on one.`, `Pick it with --source NAME, for example --source ${sources[0]!.name}.`);
  }
  return { ...config, sourceName: sources[0]?.name ?? 'default' };
}

export function makeLogger(config: Pick<SyncConfig, 'logFormat' | 'quiet' | 'apiKey'> & { verbose?: boolean }, io: CommandIo): Logger {
  return createLogger({
    format: config.logFormat, level: config.quiet ? 'warn' : config.verbose ? 'debug' : 'info', secrets: [config.apiKey],
    write: (line) => io.stderr(`${line}\n`), now: io.now,
  });
}
