/**
 * Flows, on the product's own path: New flow → the Triggered category → "When a contact triggers an
 * event" → Configure Event Trigger (the org's live triggers) → segment filter, experiment, message,
 * re-entry, schedule and conversion goal → save as draft, start, pause, run now; or the Scheduled and
 * Recurring categories: a send to a segment at a time (flow-schedule.tsx). A flow's page shows its
 * results (flow-results.tsx), its sends, its occurrences (scheduled and recurring) and, for a contact, why
 * each trigger row did or did not message them.
 */
import { type ReactNode, useState } from 'react';
import type { Flow } from '../generated/flow';
import { scheduleText, SegmentSendForm } from './flow-schedule';
import { StepsForm } from './flow-steps';
import { FlowForm } from './flow-form';
import { api, seg } from './api';
import { href } from './route';
import { Status, Time, useRequest } from './ui';

interface QueryStatus {
  name: string;
  status: string;
  liveVersion: number | null;
}

export function FlowsPage({ org }: { org: string }): ReactNode {
  const [archived, setArchived] = useState(false);
  const flows = useRequest(() => api<{ flows: Flow[] }>('GET', `/admin/v1/orgs/${seg(org)}/flows${archived ? '?archived=true' : ''}`), [org, archived]);
  return (
    <section aria-labelledby="flows-title">
      <div className="row">
        <h2 id="flows-title">Flows</h2>
        <a className="button small" href={href('orgs', org, 'flows', 'new')}>
          New flow
        </a>
        <label className="small">
          <input type="checkbox" checked={archived} onChange={(e) => setArchived(e.target.checked)} /> Deleted flows
        </label>
      </div>
      <Status request={flows} what="flows" />
      {flows.data?.flows.length === 0 && archived ? <p className="muted">No deleted flow.</p> : null}
      {flows.data?.flows.length === 0 && !archived ? (
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
