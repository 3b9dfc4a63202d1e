/**
 * Scheduled and recurring flows in the console (issue 26): the form that makes one (the segment sent to,
 * when, how fast, the message, sending safely) and a flow's occurrences with how far each got.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import type { FlowDefinition, OnceSchedule, RecurringSchedule } from '../generated/flow';
import { api, type ApiError, asPage, cursorParam, seg } from './api';
import { saveFlow } from './flow-save';
import { draftOf, MessageFields, messageOf } from './message-fields';
import { QuietHoursFields } from './quiet-hours-fields';
import { asApiError, ErrorBox, LoadMore, Status, Time, usePages, useRequest } from './ui';

type Category = 'scheduled' | 'recurring';
type Weekday = NonNullable<RecurringSchedule['weekday']>;
const WEEKDAYS: readonly Weekday[] = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];

const DEFAULT_TEMPLATE = `{
  "email": "{{ contact.email_address }}",
  "first_name": "{{ contact.first_name }}"
}`;

/** A schedule in words: "once at 2026-12-01T09:00, the org's time", "every monday at 09:00, each contact's time". */
export function scheduleText(definition: FlowDefinition): string {
  const schedule = definition.schedule;
  if (!schedule) return '';
  const zone = schedule.timeZone === 'org' ? "the org's time" : "each contact's time";
  if ('at' in schedule) return `once at ${schedule.at.replace('T', ' ')}, ${zone}`;
  const when = schedule.every === 'day' ? 'every day' : `every ${schedule.weekday ?? 'week'}`;
  const range = [schedule.startsOn ? `from ${schedule.startsOn}` : '', schedule.endsOn ? `until ${schedule.endsOn}` : ''].filter(Boolean).join(' ');
  return `${when} at ${schedule.time}, ${zone}${range ? ` (${range})` : ''}`;
}

/** Tomorrow at 09:00 as a local date-time (the browser's date: a default to change). */
function tomorrowAtNine(): string {
  const d = new Date(Date.now() + 86_400_000);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}T09:00`;
}

/** A new scheduled or recurring flow, or a saved one edited (what this form does not show, an experiment set through the API, is kept). */
export function SegmentSendForm({ org, category, segments, initial }: { org: string; category: Category; segments: string[]; initial?: FlowDefinition }): ReactNode {
  const once = initial?.schedule && 'at' in initial.schedule ? initial.schedule : undefined;
  const recurring = initial?.schedule && !('at' in initial.schedule) ? initial.schedule : undefined;
  const [name, setName] = useState(initial?.name ?? (category === 'scheduled' ? 'Announcement' : 'Weekly newsletter'));
  const [id, setId] = useState(initial?.id ?? (category === 'scheduled' ? 'announcement' : 'weekly-newsletter'));
  const [segment, setSegment] = useState(initial?.audience?.segment ?? segments[0] ?? '');
  const [at, setAt] = useState(once?.at ?? tomorrowAtNine());
  const [every, setEvery] = useState<RecurringSchedule['every']>(recurring?.every ?? 'week');
  const [weekday, setWeekday] = useState<Weekday>(recurring?.weekday ?? 'monday');
  const [time, setTime] = useState(recurring?.time ?? '09:00');
  const [startsOn, setStartsOn] = useState(recurring?.startsOn ?? '');
  const [endsOn, setEndsOn] = useState(recurring?.endsOn ?? '');
  const [zone, setZone] = useState<OnceSchedule['timeZone']>(initial?.schedule?.timeZone ?? 'org');
  const [rate, setRate] = useState(initial?.sendRatePerSecond ?? 100);
  const [draft, setDraft] = useState(() => draftOf(initial?.message, { subject: 'News for {{ contact.first_name }}', template: DEFAULT_TEMPLATE }));
  const [transactional, setTransactional] = useState(initial?.transactional ?? false);
  const [topic, setTopic] = useState(initial?.topic ?? 'all');
  const [quietHours, setQuietHours] = useState(initial?.quietHours);
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const topics = useRequest(() => api<{ topics: Array<{ topic: string; name: string }> }>('GET', `/admin/v1/orgs/${seg(org)}/topics`), [org]);

  const definition = (): FlowDefinition => {
    const message = messageOf(draft);
    const schedule: OnceSchedule | RecurringSchedule =
      category === 'scheduled'
        ? { at, timeZone: zone }
        : { every, time, ...(every === 'week' ? { weekday } : {}), timeZone: zone, ...(startsOn ? { startsOn } : {}), ...(endsOn ? { endsOn } : {}) };
    const { topic: _topic, transactional: _transactional, quietHours: _quietHours, ...kept } = initial ?? {};
    return {
      ...kept,
      id,
      name,
      category,
      audience: { segment },
      schedule,
      sendRatePerSecond: rate,
      message,
      ...(transactional ? { transactional: true } : topic === 'all' ? {} : { topic }),
      ...(quietHours ? { quietHours } : {}),
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

  return (
    <form onSubmit={(e) => void save(e)} className="card" aria-labelledby="segment-send-title">
      <h3 id="segment-send-title">{category === 'scheduled' ? 'One send to a segment' : 'A send to a segment, again and again'}</h3>
      <label>
        Name <input aria-label="Name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
      </label>
      <label>
        Id <input aria-label="Id" value={id} onChange={(e) => setId(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" readOnly={initial !== undefined} />
      </label>
      <label>
        Audience segment{' '}
        <select value={segment} onChange={(e) => setSegment(e.target.value)} required>
          {segments.length === 0 ? <option value="">no live segment yet</option> : null}
          {segments.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <fieldset className="row">
        <legend>When</legend>
        {category === 'scheduled' ? (
          <label className="inline">
            Send at <input type="datetime-local" value={at} onChange={(e) => setAt(e.target.value)} required />
          </label>
        ) : (
          <>
            <label className="inline">
              Every{' '}
              <select value={every} onChange={(e) => setEvery(e.target.value as RecurringSchedule['every'])}>
                <option value="day">day</option>
                <option value="week">week</option>
              </select>
            </label>
            {every === 'week' ? (
              <label className="inline">
                On{' '}
                <select aria-label="On" value={weekday} onChange={(e) => setWeekday(e.target.value as Weekday)}>
                  {WEEKDAYS.map((d) => (
                    <option key={d} value={d}>
                      {d}
                    </option>
                  ))}
                </select>
              </label>
            ) : null}
            <label className="inline">
              At <input aria-label="At" type="time" value={time} onChange={(e) => setTime(e.target.value)} required />
            </label>
            <label className="inline">
              Starts on <input type="date" value={startsOn} onChange={(e) => setStartsOn(e.target.value)} />
            </label>
            <label className="inline">
              Ends on <input type="date" value={endsOn} onChange={(e) => setEndsOn(e.target.value)} />
            </label>
          </>
        )}
        <label className="inline">
          <input type="radio" name="zone" checked={zone === 'org'} onChange={() => setZone('org')} /> The org's time
        </label>
        <label className="inline">
          <input type="radio" name="zone" checked={zone === 'contact'} onChange={() => setZone('contact')} /> Each contact's time
        </label>
        <label className="inline">
          At most (contacts a second) <input type="number" min="1" max="10000" value={rate} onChange={(e) => setRate(Number(e.target.value))} />
        </label>
        <p className="muted">
          Each member of the segment when the time comes gets one message per occurrence. In each contact's time, a contact without a known zone gets it in the org's. An occurrence more
          than an hour late (the flow started later, the service was down) is not sent.
        </p>
      </fieldset>
      <MessageFields draft={draft} onChange={(change) => setDraft({ ...draft, ...change })} templateData="contact, flow, variant" />
      <fieldset className="row">
        <legend>Sending safely</legend>
        <label className="inline">
          <input type="checkbox" checked={transactional} onChange={(e) => setTransactional(e.target.checked)} /> Transactional (sent whatever the contact subscribed to)
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
        <QuietHoursFields value={quietHours} onChange={setQuietHours} label="Quiet hours of this flow (instead of the org's)" />
      </fieldset>
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : initial ? 'Save changes' : 'Save as draft'}
      </button>
    </form>
  );
}

interface Occurrence {
  occurrence: string;
  status: 'sending' | 'done' | 'skipped';
  dueAt: string;
  nextDueAt: string | null;
  members: number;
  missed: number;
  decided: number;
  outcomes: Record<string, number>;
  reason: string | null;
  startedAt: string;
  finishedAt: string | null;
}

/** A scheduled or recurring flow's occurrences, newest first: status, how many decided of how many, the outcomes. */
export function Occurrences({ org, id, round }: { org: string; id: string; round: number }): ReactNode {
  const occurrences = usePages(
    (cursor) => asPage(api<{ occurrences: Occurrence[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/occurrences?limit=50${cursorParam(cursor)}`), 'occurrences'),
    [org, id, round],
  );
  return (
    <section aria-labelledby="occurrences-title">
      <div className="row">
        <h3 id="occurrences-title">Occurrences</h3>
        <button type="button" className="small" onClick={occurrences.reload}>
          Refresh
        </button>
      </div>
      <Status request={occurrences} what="occurrences" />
      {occurrences.data?.length === 0 ? <p className="muted">No occurrence yet: the first starts at its time once the flow is live.</p> : null}
      {occurrences.data && occurrences.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Occurrence</th>
              <th scope="col">Status</th>
              <th scope="col">Decided</th>
              <th scope="col">Outcomes</th>
              <th scope="col">Next due</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {occurrences.data.map((o) => (
              <tr key={o.occurrence} data-occurrence={o.occurrence} data-status={o.status}>
                <td>{o.occurrence.replace('T', ' ')}</td>
                <td>
                  {o.status}
                  {o.reason ? <div className="muted">{o.reason}</div> : null}
                </td>
                <td className="number">
                  <progress max={Math.max(1, o.members - o.missed)} value={o.decided} aria-label={`${o.decided} of ${o.members - o.missed} decided`} /> {o.decided} / {o.members - o.missed}
                  {o.missed > 0 ? <div className="muted">{o.missed} missed</div> : null}
                </td>
                <td>
                  {Object.entries(o.outcomes)
                    .map(([outcome, n]) => `${n} ${outcome}`)
                    .join(', ') || '—'}
                </td>
                <td>
                  <Time iso={o.nextDueAt} />
                </td>
                <td>
                  <Time iso={o.startedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={occurrences} what="occurrences" />
    </section>
  );
}
