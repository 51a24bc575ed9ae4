/**
 * `costsync demo`: starts the emulator on a free loopback port and talks to it with the real
 * client. (Until the sync lands, it fetches a page of each read endpoint and prints a summary.)
 */
import { createApiClient } from '../api/client.js';
import { addDays, utcDate } from '../dates.js';
import { DEMO_KEY } from '../emulator/keys.js';
import { startEmulator } from '../emulator/server.js';

export async function runDemo(out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<void> {
  const emulator = await startEmulator({ port: 0, rateLimit: 6000 });
  const client = createApiClient({ baseUrl: emulator.url, apiKey: DEMO_KEY, requestsPerMinute: 6000 });
  try {
    out(`Emulator at ${emulator.url}`);
    const end = utcDate(Date.now());
    const start = addDays(end, -6);
    const page = await client.lineItems({ startDate: start, endDate: end, limit: 5 });
    out(`First line items of ${start}..${end} (has_more=${page.hasMore}):`);
    for (const item of page.data) {
      out(`  ${item.usage_date}  ${item.provider_type.padEnd(10)} ${String(item.provider_service).padEnd(26)} $${item.net_amount_usd.toFixed(2)}`);
    }
    const rollups = await client.rollups({ startDate: start, endDate: end, groupBy: 'provider' });
    const byProvider = new Map<string, number>();
    for (const r of rollups) byProvider.set(r.provider_type ?? '?', (byProvider.get(r.provider_type ?? '?') ?? 0) + r.cost_usd);
    out('Spend by provider, last 7 days:');
    for (const [provider, usd] of [...byProvider].sort((a, b) => b[1] - a[1])) out(`  ${provider.padEnd(10)} $${usd.toFixed(2)}`);
    const anomalies = await client.anomalies({ status: 'new', limit: 5 });
    out('Newest open anomalies:');
    for (const a of anomalies) out(`  ${a.detected_date}  ${a.severity.padEnd(8)} ${a.provider_type}/${a.service}  +${a.deviation_percent}%`);
    out(`Requests: ${client.stats.requests}, retries: ${client.stats.retries}, 429s: ${client.stats.rateLimited}`);
  } finally {
    await client.close();
    await emulator.close();
  }
}
