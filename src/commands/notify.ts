/** `costsync notify --test`: sends one sample message to every configured webhook, so a person can check the wiring. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode, describeError } from '../errors.js';
import { sendNow } from '../outputs/notify.js';
import { loadConfig, processIo, type CommandIo } from './common.js';
import { settingOptions } from '../settings.js';

export function notifyOptions(yargs: Argv) {
  return settingOptions(yargs, ['connection', 'notify']).option('test', {
    type: 'boolean',
    describe: 'Send one sample message to each webhook',
  });
}

export async function runNotifyCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  const config = loadConfig(args, io, false);
  const urls = [...config.notify, ...(config.sources ?? []).flatMap((s) => s.notify ?? [])];
  try {
    if (args.test !== true) throw new ConfigError('Nothing to do.', 'Pass --test to send one sample message to each webhook.');
    if (urls.length === 0)
      throw new ConfigError('No webhook configured.', 'Pass --notify URL, or list them under "notify" in the config file.');
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return ExitCode.USAGE;
  }
  const event = {
    kind: 'test' as const,
    source: 'costsync',
    event_id: `test-${io.now()}`,
    text: 'test message from costsync: this webhook works',
  };
  // A test message is not queued: the way to try again is this command, not the next sync.
  const results = await sendNow(
    urls,
    event,
    config.notifyFormat,
    'a test message is not kept for later: run costsync notify --test again once it is fixed',
  );
  for (const r of results) io.stdout(`webhook ${r.id}: ${r.error === undefined ? 'sent' : `failed: ${r.error}`}\n`);
  return results.every((r) => r.error === undefined) ? ExitCode.OK : ExitCode.FAILED;
}
