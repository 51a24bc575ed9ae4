/** Builds the spend report: data from the views, charts rendered to SVG, one HTML file written atomically. */
import { writeFileAtomic } from '../durable-file.js';
import type { ReadOnlyWarehouse } from '../storage/duckdb.js';
import { dailySpendSpec, monthlySpec, renderSvg, topServicesSpec } from './charts.js';
import { gatherReport, type ReportData } from './data.js';
import { reportHtml } from './html.js';

export async function writeReport(
  warehouse: ReadOnlyWarehouse,
  options: { out: string; from: string | null; to: string | null; source?: string | null; now: Date },
): Promise<ReportData> {
  const data = await gatherReport(warehouse, options);
  const [daily, services, monthly] = await Promise.all([
    renderSvg(dailySpendSpec(data)),
    renderSvg(topServicesSpec(data)),
    renderSvg(monthlySpec(data)),
  ]);
  await writeFileAtomic(
    options.out,
    reportHtml(data, { daily, services, monthly }, options.now.toISOString().slice(0, 16).replace('T', ' ') + ' UTC'),
    { mode: 0o644 },
  );
  return data;
}
