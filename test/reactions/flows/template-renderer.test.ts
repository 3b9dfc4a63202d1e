/**
 * The template renderer on its worker thread: a template that defeats liquidjs's own limits (here: the
 * limits set out of reach) is stopped by the watchdog or the run's budget, the worker is replaced, and
 * the other messages of the run still render.
 */
import t, { type Test } from 'tap';
import type { MessageToRender } from '../../../src/reactions/flows/rules/decision.js';
import { DEFAULT_MESSAGE_LIMITS } from '../../../src/reactions/flows/render/render.js';
import { DEFAULT_RENDERER_LIMITS, RendererClosed, type RendererLimits, TemplateRenderer } from '../../../src/reactions/flows/render/template-renderer.js';

const data = { event: { properties: { city: 'Lisbon' } }, contact: { email_address: 'ada@example.com' }, flow: { id: 'f1', name: 'F' }, variant: null, unsubscribe_url: null };
const job = (text: string, extra: Partial<MessageToRender['data']> = {}): MessageToRender => ({
  message: { channel: 'outbox', template: { text } },
  data: { ...data, ...extra },
});
const ok = job('Enjoy {{ event.properties.city }}');
const rendered = { ok: true, message: { channel: 'outbox', content: { text: 'Enjoy Lisbon' } } };
/** 4^30 loop iterations: never finishes by itself. */
const endless = job('{% for a in (1..4) %}'.repeat(30) + 'x' + '{% endfor %}'.repeat(30));
/** No limit liquidjs would apply: only the renderer's watchdog or budget can stop a template. */
const unlimited = { timeMs: 3_600_000, steps: Number.MAX_SAFE_INTEGER, outputChars: Number.MAX_SAFE_INTEGER, memory: Number.MAX_SAFE_INTEGER };

function renderer(t: Test, limits: Partial<RendererLimits>): TemplateRenderer {
  const r = new TemplateRenderer({ ...DEFAULT_RENDERER_LIMITS, ...limits });
  t.teardown(() => r.close());
  return r;
}

t.test('ordinary templates render exactly as on the main thread', async (t) => {
  const r = renderer(t, {});
  t.same(await r.render([ok, job('{{ contact.email_address | upcase }}'), job('{{ event.nope | nope }}')]), [
    rendered,
    { ok: true, message: { channel: 'outbox', content: { text: 'ADA@EXAMPLE.COM' } } },
    { ok: false, reason: 'the template does not render: undefined filter: nope, line:1, col:1' },
  ]);
  t.same(await r.render([]), []);
});

t.test('each limit of a message fails it by name; the steps and output of a message are shared by its strings', async (t) => {
  const r = renderer(t, { message: { ...DEFAULT_MESSAGE_LIMITS, steps: 1000, outputChars: 100 } });
  const both = (a: string, b: string): MessageToRender => ({ message: { channel: 'email', template: { subject: a, text: b } }, data });
  const results = await r.render([
    job('{% for i in (1..100000) %}{% endfor %}'),
    job('{% for i in (1..1000) %}xx{% endfor %}'),
    both('{% for i in (1..600) %}{% endfor %}', '{% for i in (1..600) %}{% endfor %}'),
    both('{% for i in (1..30) %}xx{% endfor %}', '{% for i in (1..30) %}xx{% endfor %}'),
    job("{% assign s = 'xxxxxxxx' %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}"),
    both('{% for i in (1..400) %}{% endfor %}', '{% for i in (1..20) %}xx{% endfor %}'),
  ]);
  t.match(results[0], { ok: false, reason: /over a limit: loop iterations limit exceeded \(1000 steps\)/ });
  t.match(results[1], { ok: false, reason: /over a limit: output size limit exceeded \(100 characters\)/ });
  t.match(results[2], { ok: false, reason: /loop iterations limit exceeded/ }, 'subject and text draw on one allowance of steps');
  t.match(results[3], { ok: false, reason: /output size limit exceeded/ }, 'and of output');
  t.match(results[4], { ok: false, reason: /over a limit: memory alloc limit exceeded/ });
  t.same(results[5], { ok: true, message: { channel: 'email', subject: '', text: 'xx'.repeat(20) } }, 'under every limit');
});

t.test('a message the worker does not finish is stopped by the watchdog; the worker is replaced', async (t) => {
  const r = renderer(t, { message: unlimited, watchdogMs: 300, runBudgetMs: 3_600_000 });
  const results = await r.render([endless, ok, endless, ok]);
  t.match(results[0], { ok: false, reason: /^the template did not finish within 300 ms, so its renderer was stopped; .*simplify the template/ });
  t.same(results[1], rendered, 'the next message renders on a new worker');
  t.match(results[2], { ok: false, reason: /did not finish within 300 ms/ });
  t.same(results[3], rendered);
  t.same(await r.render([ok]), [rendered], 'the next run renders too');
});

t.test("the run's budget stops a costly message and fails the rest of the run", async (t) => {
  const r = renderer(t, { message: unlimited, watchdogMs: 3_600_000, runBudgetMs: 300 });
  const results = await r.render([endless, ok, ok]);
  for (const result of results) t.match(result, { ok: false, reason: /^the run's render budget of 300 ms is used up, so this message was not rendered; / });
  t.same(await r.render([ok]), [rendered], 'the next run has its own budget');
});

t.test('a template that exhausts the worker heap ends the worker, not the process', async (t) => {
  // Only the heap may stop it: on a loaded machine filling 32 MB took longer than the 2 s watchdog.
  const r = renderer(t, { message: unlimited, heapMb: 32, watchdogMs: 300_000, runBudgetMs: 300_000 });
  const results = await r.render([ok, job('{{ (1..200000000) | size }}'), ok]);
  t.same(results[0], rendered);
  t.match(results[1], { ok: false, reason: /^the template renderer stopped while rendering this message \(.*memory/ });
  t.same(results[2], rendered, 'a new worker renders the next message');
});

t.test('data that cannot reach the worker fails its row only', async (t) => {
  const r = renderer(t, {});
  const hostile = job('{{ contact.email_address }}', { contact: { email_address: 'x@example.com', fn: () => 1 } as never });
  const results = await r.render([ok, hostile, ok]);
  t.same(results[0], rendered);
  t.match(results[1], { ok: false, reason: /not plain data/ });
  t.same(results[2], rendered);
});

t.test('close() ends a run still rendering: it fails (and its transaction rolls back) rather than deciding rows', async (t) => {
  const r = new TemplateRenderer({ ...DEFAULT_RENDERER_LIMITS, message: unlimited, watchdogMs: 3_600_000, runBudgetMs: 3_600_000 });
  t.same(await r.render([ok]), [rendered], 'the worker is up');
  const run = r.render([endless]);
  const rejected = t.rejects(run, RendererClosed);
  await new Promise((resolve) => setImmediate(resolve));
  await r.close();
  await rejected;
  await t.rejects(r.render([ok]), RendererClosed, 'a closed renderer renders nothing');
});
