/**
 * docs/operations/metrics.md cannot drift from the registry: every audience_* metric a running app
 * registers (at start and at scrape time) has a row with its type and label names, and every row names a
 * metric that exists.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/paths.js';

interface Row {
  type: string;
  labels: string[];
}

/** The table's rows by metric name (a row may name several: `a`, `b`). */
function documented(): Map<string, Row> {
  const rows = new Map<string, Row>();
  for (const line of readFileSync(join(ROOT, 'docs/operations/metrics.md'), 'utf8').split('\n')) {
    if (!line.startsWith('| `audience_')) continue;
    const [names, type, labels] = line.split('|').slice(1).map((c) => c.trim());
    for (const [, name] of names!.matchAll(/`(audience_\w+)`/g)) rows.set(name!, { type: type!, labels: labels!.split(',').map((l) => l.trim()).filter(Boolean).sort() });
  }
  return rows;
}

t.test('every audience_* metric has its row, with its type and labels, and every row a metric', async (t) => {
  const h = await startTestApp(t);
  await h.metrics(); // the scrape-time gauges are registered by then
  const registered = new Map<string, Row>();
  for (const metric of await h.app.metrics.registry.getMetricsAsJSON()) {
    if (!metric.name.startsWith('audience_')) continue;
    const labels = (h.app.metrics.registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
    registered.set(metric.name, { type: String(metric.type), labels: [...labels].sort() });
  }
  t.ok(registered.size >= 30, `${registered.size} metrics registered`);
  const rows = documented();
  for (const [name, metric] of registered) t.same(rows.get(name), metric, `${name}: documented as ${metric.type} with labels [${metric.labels.join(', ')}]`);
  for (const name of rows.keys()) t.ok(registered.has(name), `${name}: the row names a metric that exists`);
});
