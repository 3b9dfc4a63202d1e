/**
 * deploy/prometheus/ and deploy/grafana/ against the service: every metric an alert or a dashboard
 * panel names is one a real app exports, and Prometheus scrapes every Audience process of compose.yaml.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { parse } from 'yaml';
import { startTestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/paths.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

const alerts = parse(read('deploy/prometheus/alerts.yml')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
const dashboard = JSON.parse(read('deploy/grafana/audience.json')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
const queries = [
  ...alerts.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
  ...dashboard.panels.flatMap((p) => p.targets.map((target) => ({ where: `panel "${p.title}"`, expr: target.expr }))),
];

t.test('every metric the alerts and the dashboard use is exported', async (t) => {
  const h = await startTestApp(t);
  const text = await h.metrics();
  const exported = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\w+) (\w+)$/gm)) {
    exported.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) exported.add(name! + suffix);
  }
  t.ok(queries.length >= 10, 'alerts and panels have queries');
  for (const { where, expr } of queries) {
    const names = expr.match(/\baudience_\w+/g) ?? [];
    t.ok(names.length > 0, `${where} uses an Audience metric`);
    for (const name of names) t.ok(exported.has(name), `${where}: ${name} is exported`);
  }
});

t.test('Prometheus scrapes every Audience process of compose.yaml', async (t) => {
  const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, { build?: unknown; environment?: Record<string, string> }> };
  const audience = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);
  const processes = audience.map(([name, s]) => `${name}:${s.environment?.METRICS_PORT}`);
  t.ok(audience.every(([, s]) => /^\d+$/.test(s.environment?.METRICS_PORT ?? '')), 'each serves /metrics on METRICS_PORT, where no key is asked for');
  const prometheus = parse(read('deploy/prometheus/prometheus.yml')) as { scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }> };
  const targets = prometheus.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
  t.same(targets.sort(), processes.sort());
});
