/**
 * Flows, on the product's own path: New flow → the Triggered category → "When a contact triggers an
 * event" → Configure Event Trigger (the org's live triggers) → segment filter, experiment, message,
 * re-entry, schedule and conversion goal → save as draft, start, pause, run now; or the Scheduled and
 * Recurring categories: a send to a segment at a time (flow-schedule.tsx). A flow's page shows its
 * results (flow-results.tsx), its sends, its occurrences (scheduled and recurring) and, for a contact, why
 * each trigger row did or did not message them.
 */
import { type FormEvent, type ReactNode, useEffect, useRef, useState } from 'react';
import type { Condition, Flow, FlowDefinition, Variant } from '../generated/flow';
import { QuietHoursFields } from './quiet-hours-fields';
import { Occurrences, scheduleText, SegmentSendForm } from './flow-schedule';
import { draftOf, MessageFields, messageOf } from './message-fields';
import { templateTextOf } from './message-template';
import { FlowActivitySection } from './flow-activity';
import { FlowResultsSection } from './flow-results';
import { FlowStepsSection, RealTimeField, StepsForm } from './flow-steps';
import { SimulateContact } from './flow-simulate';
import { api, type ApiError, asPage, cursorParam, seg } from './api';
import { saveFlow } from './flow-save';
import { href } from './route';
import { ACTIVITY_REFRESH_MS, asApiError, ErrorBox, LoadMore, Status, Time, useEvery, useInView, usePages, useRequest } from './ui';


interface MessagePreview {
  row: Record<string, unknown> | null;
  rendered: Record<string, unknown> | null;
  error: string | null;
}

/** A variant as the form edits it: its own message as template text (sent as its `message`). */
type VariantDraft = Omit<Variant, 'message'> & { template?: string };

const OPS: readonly Condition['op'][] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'exists'];

interface BranchDraft {
  field: string;
  op: Condition['op'];
  value: string;
  template: string;
}

/** A branch's condition: the value as JSON when it reads as JSON (3, true, ["a","b"]), else as text. */
function condition(branch: BranchDraft): Condition {
  if (branch.op === 'exists') return { field: branch.field, op: branch.op };
  let value: Condition['value'] = branch.value;
  try {
    value = JSON.parse(branch.value);
  } catch {
    // text
  }
  return { field: branch.field, op: branch.op, value };
}

interface QueryStatus {
  name: string;
  status: string;
  liveVersion: number | null;
}

export function FlowsPage({ org }: { org: string }): ReactNode {
  const flows = useRequest(() => api<{ flows: Flow[] }>('GET', `/admin/v1/orgs/${seg(org)}/flows`), [org]);
  return (
    <section aria-labelledby="flows-title">
      <div className="row">
        <h2 id="flows-title">Flows</h2>
        <a className="button small" href={href('orgs', org, 'flows', 'new')}>
          New flow
        </a>
      </div>
      <Status request={flows} what="flows" />
      {flows.data?.flows.length === 0 ? (
        <p className="muted" data-empty>
          No flow yet. A flow messages a contact when a live trigger returns a row for them (<strong>New flow</strong> → Triggered), or a segment on a
          schedule (Scheduled, Recurring); from a terminal, <code>npx audiencectl flow create {org} --file flow.json</code>.
        </p>
      ) : null}
      {flows.data && flows.data.flows.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Flow</th>
              <th scope="col">Status</th>
              <th scope="col">Trigger or schedule</th>
              <th scope="col">Last run</th>
            </tr>
          </thead>
          <tbody>
            {flows.data.flows.map((flow) => (
              <tr key={flow.definition.id}>
                <td>
                  <a href={href('orgs', org, 'flows', flow.definition.id)}>{flow.definition.name}</a>
                </td>
                <td>
                  <span className={`badge ${flow.status === 'live' ? 'live' : ''}`}>{flow.status}</span>
                </td>
                <td>{flow.definition.trigger ? <code>{flow.definition.trigger}</code> : scheduleText(flow.definition)}</td>
                <td>
                  <Time iso={flow.lastRunAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

const CATEGORIES = [
  { id: 'triggered', title: 'Triggered', about: 'Message a contact when they do something: an event arrives.' },
  { id: 'scheduled', title: 'Scheduled', about: "One send to a segment's members at a set time, in the org's time or each contact's." },
  { id: 'recurring', title: 'Recurring', about: "A send to a segment's members every day or week at a set time." },
] as const;

const DEFAULT_TEMPLATE = `{
  "email": "{{ contact.email_address }}",
  "event": "{{ event.event_type }}",
  "variant": "{{ variant.label }}"
}`;

/** New flow: one step at a time, as the product describes it, then the rest on one form. */
export function NewFlow({ org }: { org: string }): ReactNode {
  const [category, setCategory] = useState<string>();
  const [entry, setEntry] = useState(false);
  const [trigger, setTrigger] = useState<string>();
  const [withSteps, setWithSteps] = useState(false);
  const triggers = useRequest(() => api<{ triggers: QueryStatus[] }>('GET', `/admin/v1/orgs/${seg(org)}/triggers`), [org]);
  const segments = useRequest(() => api<{ segments: QueryStatus[] }>('GET', `/admin/v1/orgs/${seg(org)}/segments`), [org]);
  const live = (list: QueryStatus[] | undefined) => (list ?? []).filter((q) => q.liveVersion !== null);

  return (
    <section aria-labelledby="new-flow-title">
      <h2 id="new-flow-title">New flow</h2>
      <fieldset className="cards">
        <legend>Category</legend>
        {CATEGORIES.map((c) => (
          <button key={c.id} type="button" className="category" aria-pressed={category === c.id} onClick={() => setCategory(c.id)}>
            <strong>{c.title}</strong>
            <span>{c.about}</span>
          </button>
        ))}
      </fieldset>
      {category === 'triggered' ? (
        <fieldset className="cards">
          <legend>Entry</legend>
          <button type="button" className="category" aria-pressed={entry} onClick={() => setEntry(true)}>
            <strong>When a contact triggers an event</strong>
            <span>Each row of a trigger's SQL enters its contact into the flow. Triggers run on production events only, so there is no staging flow.</span>
          </button>
        </fieldset>
      ) : null}
      {entry ? (
        <fieldset>
          <legend>Configure Event Trigger</legend>
          <Status request={triggers} what="triggers" />
          {triggers.data && live(triggers.data.triggers).length === 0 ? (
            <p className="muted">
              No live trigger yet: make one from an event type on the <a href={href('orgs', org, 'events')}>Events</a> page.
            </p>
          ) : null}
          <ul className="plain pick">
            {live(triggers.data?.triggers).map((t) => (
              <li key={t.name}>
                <label className="inline">
                  <input type="radio" name="trigger" value={t.name} checked={trigger === t.name} onChange={() => setTrigger(t.name)} /> <code>{t.name}</code>{' '}
                  <span className="muted">v{t.liveVersion}</span>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
      ) : null}
      {category === 'triggered' && trigger ? (
        <fieldset className="cards">
          <legend>What it does</legend>
          <button type="button" className="category" aria-pressed={!withSteps} onClick={() => setWithSteps(false)}>
            <strong>Send a message</strong>
            <span>One message per entry, with variants, branches and a holdout.</span>
          </button>
          <button type="button" className="category" aria-pressed={withSteps} onClick={() => setWithSteps(true)}>
            <strong>Steps</strong>
            <span>Waits, waits for an event (“unless they bought”), several messages, and an exit event.</span>
          </button>
        </fieldset>
      ) : null}
      {category === 'triggered' && trigger && withSteps ? <StepsForm org={org} trigger={trigger} /> : null}
      {category === 'triggered' && trigger && !withSteps ? <FlowForm org={org} trigger={trigger} segments={live(segments.data?.segments).map((s) => s.name)} /> : null}
      {(category === 'scheduled' || category === 'recurring') && segments.data ? (
        <SegmentSendForm key={category} org={org} category={category} segments={live(segments.data.segments).map((s) => s.name)} />
      ) : null}
    </section>
  );
}

function FlowForm({ org, trigger, segments, initial }: { org: string; trigger: string; segments: string[]; initial?: FlowDefinition }): ReactNode {
  const reentryOf = initial?.reentry ?? 'every_event';
  const [name, setName] = useState(initial?.name ?? `${trigger.replaceAll('_', ' ')} follow-up`);
  const [id, setId] = useState(initial?.id ?? `${trigger.replaceAll('_', '-')}-follow-up`.slice(0, 64));
  const [segment, setSegment] = useState(initial?.segmentFilter?.segment ?? '');
  const [mode, setMode] = useState<'exclude' | 'include'>(initial?.segmentFilter?.mode ?? 'exclude');
  const [variants, setVariants] = useState<VariantDraft[]>(
    (initial?.experiment?.variants ?? []).map(({ message, ...variant }) => (message ? { ...variant, template: templateTextOf(message) } : variant)),
  );
  const [branches, setBranches] = useState<BranchDraft[]>(
    (initial?.branches ?? []).map((b) => ({
      field: b.when.field,
      op: b.when.op,
      value: b.when.value === undefined ? '' : typeof b.when.value === 'string' ? b.when.value : JSON.stringify(b.when.value),
      template: templateTextOf(b.message),
    })),
  );
  const setBranch = (i: number, change: Partial<BranchDraft>) => setBranches(branches.map((b, j) => (j === i ? { ...b, ...change } : b)));
  const [draft, setDraft] = useState(() => draftOf(initial?.message, { subject: 'Your {{ event.event_type }}', template: DEFAULT_TEMPLATE }));
  const [reentry, setReentry] = useState<'every_event' | 'once' | 'after'>(typeof reentryOf === 'object' ? 'after' : reentryOf);
  const [afterSeconds, setAfterSeconds] = useState(typeof reentryOf === 'object' ? reentryOf.afterSeconds : 86400);
  const [schedule, setSchedule] = useState(initial?.scheduleSeconds ?? 60);
  const [realTime, setRealTime] = useState(initial?.realTime ?? true);
  const topics = useRequest(() => api<{ topics: Array<{ topic: string; name: string }> }>('GET', `/admin/v1/orgs/${seg(org)}/topics`), [org]);
  const [topic, setTopic] = useState(initial?.topic ?? 'all');
  const [transactional, setTransactional] = useState(initial?.transactional ?? false);
  const [maxAge, setMaxAge] = useState(initial?.maxEventAgeSeconds ?? 86400);
  const [capped, setCapped] = useState(initial?.frequencyCap !== undefined);
  const [capSends, setCapSends] = useState(initial?.frequencyCap?.maxSends ?? 1);
  const [capSeconds, setCapSeconds] = useState(initial?.frequencyCap?.withinSeconds ?? 86400);
  const [quietHours, setQuietHours] = useState(initial?.quietHours);
  const [goalEvent, setGoalEvent] = useState(initial?.goal?.event ?? '');
  const [goalSeconds, setGoalSeconds] = useState(initial?.goal?.withinSeconds ?? 7 * 86400);
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);

  const definition = (): FlowDefinition => {
    const message = messageOf(draft);
    return {
      id,
      name,
      category: 'triggered',
      entry: 'when_contact_triggers_event',
      trigger,
      scheduleSeconds: schedule,
      realTime,
      ...(segment ? { segmentFilter: { segment, mode } } : {}),
      ...(variants.length > 0
        ? { experiment: { variants: variants.map(({ template: own, ...variant }) => (own === undefined ? variant : { ...variant, message: messageOf(draft, own) })) } }
        : {}),
      ...(branches.length > 0 ? { branches: branches.map((b) => ({ when: condition(b), message: messageOf(draft, b.template) })) } : {}),
      message,
      reentry: reentry === 'after' ? { afterSeconds } : reentry,
      ...(transactional ? { transactional: true } : topic === 'all' ? {} : { topic }),
      maxEventAgeSeconds: maxAge,
      ...(capped ? { frequencyCap: { maxSends: capSends, withinSeconds: capSeconds } } : {}),
      ...(quietHours ? { quietHours } : {}),
      ...(goalEvent ? { goal: { event: goalEvent, withinSeconds: goalSeconds } } : {}),
    };
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await saveFlow(org, initial?.id, definition());
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  const setVariant = (i: number, change: Partial<VariantDraft>) => setVariants(variants.map((v, j) => (j === i ? { ...v, ...change } : v)));
  const [preview, setPreview] = useState<MessagePreview>();
  const previewInView = useInView<HTMLDivElement>(preview);
  const previewMessage = async () => {
    setError(undefined);
    try {
      const variant = variants.find((v) => !v.holdout)?.label;
      const { message, branches: flowBranches, experiment } = definition();
      setPreview(
        await api<MessagePreview>('POST', `/admin/v1/orgs/${seg(org)}/flows/message-preview`, {
          trigger,
          message,
          ...(flowBranches ? { branches: flowBranches } : {}),
          ...(experiment ? { experiment } : {}),
          flowName: name,
          ...(variant ? { variant } : {}),
        }),
      );
    } catch (e) {
      setError(asApiError(e));
    }
  };

  return (
    <form onSubmit={save} className="card" aria-labelledby="flow-form-title">
      <h3 id="flow-form-title">
        Flow on <code>{trigger}</code>
      </h3>
      <label>
        Name <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
      </label>
      <label>
        Id <input value={id} onChange={(e) => setId(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" readOnly={initial !== undefined} />
      </label>
      <fieldset>
        <legend>Segment membership filter</legend>
        <label className="inline">
          Segment{' '}
          <select value={segment} onChange={(e) => setSegment(e.target.value)} aria-label="Segment">
            <option value="">none</option>
            {segments.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>{' '}
        <label className="inline">
          <input type="radio" name="mode" checked={mode === 'exclude'} onChange={() => setMode('exclude')} /> Exclude its members
        </label>{' '}
        <label className="inline">
          <input type="radio" name="mode" checked={mode === 'include'} onChange={() => setMode('include')} /> Only its members
        </label>
      </fieldset>
      <fieldset>
        <legend>Experiment</legend>
        {variants.length === 0 ? <p className="muted">No experiment: every contact gets the message.</p> : null}
        {variants.map((variant, i) => (
          <div className="row" key={i}>
            <label className="inline">
              Variant label <input value={variant.label} onChange={(e) => setVariant(i, { label: e.target.value })} required />
            </label>
            <label className="inline">
              Weight <input type="number" min="0.01" step="any" value={variant.weight} onChange={(e) => setVariant(i, { weight: Number(e.target.value) })} />
            </label>
            <label className="inline">
              <input type="checkbox" checked={variant.holdout ?? false} onChange={(e) => setVariant(i, { holdout: e.target.checked })} /> Holdout (sends nothing)
            </label>
            <label className="inline">
              <input type="checkbox" checked={variant.template !== undefined} disabled={variant.holdout} onChange={(e) => setVariant(i, { template: e.target.checked ? draft.template : undefined })} /> Own message
            </label>
            <button type="button" className="small" onClick={() => setVariants(variants.filter((_, j) => j !== i))} aria-label={`Remove variant ${variant.label}`}>
              Remove
            </button>
            {variant.template !== undefined && !variant.holdout ? (
              <label className="wide">
                Message of variant {variant.label}
                <textarea value={variant.template} onChange={(e) => setVariant(i, { template: e.target.value })} rows={5} spellCheck={false} />
              </label>
            ) : null}
          </div>
        ))}
        <button type="button" className="small" onClick={() => setVariants([...variants, { label: variants.length === 0 ? 'A' : String.fromCharCode(65 + variants.length), weight: 50 }])}>
          Add variant
        </button>
      </fieldset>
      <MessageFields draft={draft} onChange={(change) => setDraft({ ...draft, ...change })} templateData="contact, event, flow, variant">
        <button type="button" className="small" onClick={() => void previewMessage()}>
          Preview the message
        </button>
        {preview ? (
          <div className="message-preview" role="region" aria-label="Message preview" ref={previewInView}>
            {preview.rendered ? (
              <>
                <p className="muted">
                  Rendered for <code>{String(preview.row?.identity ?? '')}</code>, from the first row <code>{trigger}</code> returns over the last 24 hours (event{' '}
                  <code>{String(preview.row?.event_id ?? '')}</code>):
                </p>
                <pre className="json">{JSON.stringify(preview.rendered, null, 2)}</pre>
              </>
            ) : (
              <p className="error">{preview.error}</p>
            )}
          </div>
        ) : null}
      </MessageFields>
      <fieldset>
        <legend>Branches</legend>
        <p className="muted">The first branch whose condition holds sends its own message (a variant's own message comes first); otherwise the message above.</p>
        {branches.map((branch, i) => (
          <div className="row" key={i}>
            <label className="inline">
              Field <input value={branch.field} onChange={(e) => setBranch(i, { field: e.target.value })} required pattern="(event|contact|variant|wait)(\.[A-Za-z0-9_]+)+" placeholder="event.properties.nights" />
            </label>
            <label className="inline">
              Condition{' '}
              <select value={branch.op} onChange={(e) => setBranch(i, { op: e.target.value as BranchDraft['op'] })}>
                {OPS.map((op) => (
                  <option key={op} value={op}>
                    {op}
                  </option>
                ))}
              </select>
            </label>
            {branch.op !== 'exists' ? (
              <label className="inline">
                Value <input value={branch.value} onChange={(e) => setBranch(i, { value: e.target.value })} placeholder='3, "Lisbon" or ["a","b"]' />
              </label>
            ) : null}
            <button type="button" className="small" onClick={() => setBranches(branches.filter((_, j) => j !== i))} aria-label={`Remove branch ${i + 1}`}>
              Remove
            </button>
            <label className="wide">
              Message of branch {i + 1}
              <textarea value={branch.template} onChange={(e) => setBranch(i, { template: e.target.value })} rows={5} spellCheck={false} />
            </label>
          </div>
        ))}
        <button type="button" className="small" onClick={() => setBranches([...branches, { field: 'event.properties.', op: 'gte', value: '', template: draft.template }])}>
          Add branch
        </button>
      </fieldset>
      <fieldset className="row">
        <legend>Conversion goal</legend>
        <label className="inline">
          Goal event{' '}
          <input value={goalEvent} onChange={(e) => setGoalEvent(e.target.value)} placeholder="complete_transaction or custom_…" aria-describedby="goal-help" />
        </label>
        <label className="inline">
          Conversion window (seconds) <input type="number" min="1" max="7776000" value={goalSeconds} onChange={(e) => setGoalSeconds(Number(e.target.value))} />
        </label>
        <p id="goal-help" className="muted">
          A contact converts when this event (as stored: the event types page) happens within that time after the flow entered them. Empty: no goal.
        </p>
      </fieldset>
      <fieldset className="row">
        <legend>Re-entry and schedule</legend>
        <label className="inline">
          Re-entry{' '}
          <select value={reentry} onChange={(e) => setReentry(e.target.value as typeof reentry)}>
            <option value="every_event">every event</option>
            <option value="once">once per contact</option>
            <option value="after">again after a while</option>
          </select>
        </label>
        {reentry === 'after' ? (
          <label className="inline">
            Seconds <input type="number" min="1" value={afterSeconds} onChange={(e) => setAfterSeconds(Number(e.target.value))} />
          </label>
        ) : null}
        <RealTimeField value={realTime} onChange={setRealTime} />
        <label className="inline">
          {realTime ? 'And at least every (seconds)' : 'Run every (seconds)'}{' '}
          <input type="number" min="1" max="86400" value={schedule} onChange={(e) => setSchedule(Number(e.target.value))} />
        </label>
      </fieldset>
      <fieldset className="row">
        <legend>Sending safely</legend>
        <label className="inline">
          <input type="checkbox" checked={transactional} onChange={(e) => setTransactional(e.target.checked)} /> Transactional (sent whatever the contact subscribed to; no unsubscribe link)
        </label>
        {transactional ? null : (
          <label className="inline">
            Subscription topic{' '}
            <select value={topic} onChange={(e) => setTopic(e.target.value)}>
              {(topics.data?.topics ?? [{ topic: 'all', name: 'All marketing' }]).map((t) => (
                <option key={t.topic} value={t.topic}>
                  {t.topic} ({t.name})
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="inline">
          Skip events older than (seconds) <input type="number" min="1" max="31536000" value={maxAge} onChange={(e) => setMaxAge(Number(e.target.value))} />
        </label>
        <label className="inline">
          <input type="checkbox" checked={capped} onChange={(e) => setCapped(e.target.checked)} /> Cap this flow per contact
        </label>
        {capped ? (
          <>
            <label className="inline">
              At most (messages) <input type="number" min="1" max="100000" value={capSends} onChange={(e) => setCapSends(Number(e.target.value))} />
            </label>
            <label className="inline">
              Within (seconds) <input type="number" min="60" max="31536000" value={capSeconds} onChange={(e) => setCapSeconds(Number(e.target.value))} />
            </label>
          </>
        ) : null}
        <QuietHoursFields value={quietHours} onChange={setQuietHours} label="Quiet hours of this flow (instead of the org's)" />
      </fieldset>
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : initial ? 'Save changes' : 'Save as draft'}
      </button>
    </form>
  );
}

/** Editing a saved flow: the same form, filled in; its id and trigger stay. */
export function EditFlow({ org, id }: { org: string; id: string }): ReactNode {
  const flow = useRequest(() => api<Flow>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}`), [org, id]);
  const segments = useRequest(() => api<{ segments: QueryStatus[] }>('GET', `/admin/v1/orgs/${seg(org)}/segments`), [org]);
  return (
    <section aria-labelledby="edit-flow-title">
      <h2 id="edit-flow-title">Edit {flow.data?.definition.name ?? id}</h2>
      <Status request={flow} what="the flow" />
      {flow.data && segments.data && flow.data.definition.category !== 'triggered' ? (
        <SegmentSendForm
          org={org}
          category={flow.data.definition.category}
          segments={segments.data.segments.filter((s) => s.liveVersion !== null).map((s) => s.name)}
          initial={flow.data.definition}
        />
      ) : flow.data?.definition.steps ? (
        <StepsForm org={org} trigger={flow.data.definition.trigger ?? ''} initial={flow.data.definition} />
      ) : flow.data && segments.data ? (
        <FlowForm
          org={org}
          trigger={flow.data.definition.trigger ?? ''}
          segments={segments.data.segments.filter((s) => s.liveVersion !== null).map((s) => s.name)}
          initial={flow.data.definition}
        />
      ) : null}
    </section>
  );
}

interface Send {
  sendId: string;
  email: string;
  variant: string | null;
  channel: string;
  status: string;
  attempts: number;
  lastError: string | null;
  triggerHash: string;
  createdAt: string;
}

interface Decision {
  eventId: string;
  identity: string;
  email: string | null;
  outcome: string;
  variant: string | null;
  reason: string | null;
  deliveryStatus: string | null;
  triggerHash: string;
  decidedAt: string;
}

export function FlowDetail({ org, id }: { org: string; id: string }): ReactNode {
  const flow = useRequest(() => api<Flow>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}`), [org, id]);
  // A live flow runs in the background: its last run and cursor are read again every few seconds.
  const live = flow.data?.status === 'live';
  useEvery(ACTIVITY_REFRESH_MS, flow.reload, live);
  const [round, setRound] = useState(0);
  // A run in the background (a live flow) refreshes what the page shows of its sends, as a button would.
  const lastRun = flow.data?.lastRunAt;
  const seenRun = useRef(lastRun);
  useEffect(() => {
    const first = seenRun.current === undefined;
    if (lastRun === seenRun.current) return;
    seenRun.current = lastRun;
    if (!first) setRound((r) => r + 1);
  }, [lastRun]);
  const [error, setError] = useState<ApiError>();
  const [ran, setRan] = useState<string>();
  const act = async (action: 'start' | 'pause' | 'run') => {
    setError(undefined);
    try {
      const result = await api<{ rows?: number; outcomes?: Record<string, number>; skipped?: string | null }>('POST', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/${action}`);
      if (action === 'run') setRan(result.skipped ?? `${result.rows} rows: ${Object.entries(result.outcomes ?? {}).map(([k, v]) => `${v} ${k}`).join(', ') || 'nothing new'}`);
      flow.reload();
      setRound((r) => r + 1);
    } catch (e) {
      setError(asApiError(e));
    }
  };
  const definition = flow.data?.definition;
  const triggered = definition?.category === 'triggered';
  return (
    <section aria-labelledby="flow-title">
      <h2 id="flow-title">{definition?.name ?? id}</h2>
      <Status request={{ error: flow.error, loading: flow.loading && !flow.data }} what="the flow" />
      {flow.data && definition ? (
        <>
          <p>
            <span className={`badge ${flow.data.status === 'live' ? 'live' : ''}`}>{flow.data.status}</span> ·{' '}
            {triggered ? (
              <>
                trigger <code>{definition.trigger}</code>
              </>
            ) : (
              <>
                to segment <code>{definition.audience?.segment}</code>, {scheduleText(definition)}
              </>
            )}
            {definition.segmentFilter ? (
              <>
                {' '}
                · {definition.segmentFilter.mode ?? 'exclude'} segment <code>{definition.segmentFilter.segment}</code>
              </>
            ) : null}
            {definition.experiment ? <> · variants {definition.experiment.variants.map((v) => `${v.label} (${v.weight}${v.holdout ? ', holdout' : ''})`).join(', ')}</> : null} ·{' '}
            {definition.steps ? `${definition.steps.length} steps` : definition.message?.channel} · last run <Time iso={flow.data.lastRunAt} />
          </p>
          {flow.data.lastError ? <p className="error">{flow.data.lastError}</p> : null}
          <div className="row">
            <a className="button secondary" href={href('orgs', org, 'flows', id, 'edit')}>
              Edit
            </a>
            {flow.data.status !== 'live' ? (
              <button type="button" onClick={() => void act('start')}>
                Start
              </button>
            ) : (
              <>
                <button type="button" onClick={() => void act('pause')}>
                  Pause
                </button>
                {triggered ? (
                  <button type="button" onClick={() => void act('run')}>
                    Run now
                  </button>
                ) : null}
              </>
            )}
          </div>
          {ran ? <p role="status">Run: {ran}</p> : null}
          <ErrorBox error={error} />
          {definition.steps ? <FlowStepsSection org={org} id={id} definition={definition} round={round} /> : null}
          {triggered ? <SimulateContact org={org} id={id} /> : <Occurrences org={org} id={id} round={round} />}
          <FlowActivitySection org={org} id={id} round={round} live={live} />
          <FlowResultsSection org={org} id={id} round={round} />
          <Sends org={org} id={id} round={round} />
          <WhyNot org={org} id={id} round={round} />
        </>
      ) : null}
    </section>
  );
}

/** Sends per page; a status filter finds the failed and dead ones among many. */
const SENDS_PAGE = 100;
const SEND_STATUSES = ['pending', 'delivered', 'failed', 'dead', 'holdout', 'entered', 'deferred', 'cancelled'] as const;

function Sends({ org, id, round }: { org: string; id: string; round: number }): ReactNode {
  const [status, setStatus] = useState('');
  const sends = usePages(
    (cursor) =>
      asPage(
        api<{ sends: Send[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/sends?limit=${SENDS_PAGE}${status ? `&status=${status}` : ''}${cursorParam(cursor)}`),
        'sends',
      ),
    [org, id, round, status],
  );
  return (
    <section aria-labelledby="sends-title">
      <div className="row">
        <h3 id="sends-title">Sends</h3>
        <label className="inline">
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">all</option>
            {SEND_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="small" onClick={sends.reload}>
          Refresh
        </button>
      </div>
      <Status request={sends} what="sends" />
      {sends.data?.length === 0 ? <p className="muted">{status ? `No ${status} send.` : 'No send yet.'}</p> : null}
      {sends.data && sends.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Contact</th>
              <th scope="col">Variant</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Trigger version</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {sends.data.map((send) => (
              <tr key={send.sendId} data-send={send.email}>
                <td>{send.email}</td>
                <td>{send.variant ?? '—'}</td>
                <td>
                  {send.status}
                  {send.lastError ? <div className="muted">{send.lastError}</div> : null}
                </td>
                <td className="number">{send.attempts}</td>
                <td>
                  <code>{send.triggerHash.slice(0, 12)}</code>
                </td>
                <td>
                  <Time iso={send.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={sends} what="sends" />
    </section>
  );
}

/** Every trigger row of one contact and what happened to it, with the reason. */
function WhyNot({ org, id, round }: { org: string; id: string; round: number }): ReactNode {
  const [email, setEmail] = useState('');
  const [asked, setAsked] = useState<string>();
  const decisions = usePages(
    (cursor) =>
      asked === undefined
        ? Promise.resolve({ items: [], nextCursor: null })
        : asPage(
            api<{ decisions: Decision[]; nextCursor: string | null }>(
              'GET',
              `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/decisions?identity=${encodeURIComponent(`email:${asked}`)}&limit=100${cursorParam(cursor)}`,
            ),
            'decisions',
          ),
    [org, id, asked, round],
  );
  return (
    <section aria-labelledby="why-title">
      <h3 id="why-title">Why was a contact (not) messaged?</h3>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(email.trim());
        }}
      >
        <label className="inline">
          Contact e-mail <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
        </label>
        <button type="submit">Show decisions</button>
      </form>
      {asked !== undefined ? <Status request={decisions} what="decisions" /> : null}
      {asked !== undefined && decisions.data?.length === 0 ? <p className="muted">No trigger row of {asked} reached this flow yet.</p> : null}
      {decisions.data && decisions.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Decided</th>
              <th scope="col">Event</th>
              <th scope="col">Outcome</th>
              <th scope="col">Variant</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {decisions.data.map((d) => (
              <tr key={`${d.eventId}-${d.decidedAt}`} data-outcome={d.outcome}>
                <td>
                  <Time iso={d.decidedAt} />
                </td>
                <td>
                  <code>{d.eventId}</code>
                </td>
                <td>
                  <strong>{d.outcome}</strong>
                  {d.deliveryStatus ? <span className="muted"> ({d.deliveryStatus})</span> : null}
                </td>
                <td>{d.variant ?? '—'}</td>
                <td>{d.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={decisions} what="decisions" />
    </section>
  );
}
