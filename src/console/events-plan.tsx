/**
 * The tracking plan of one custom event type, on the Events page (issue 42): the plan in force (or none),
 * a JSON Schema editor seeded from the plan or from "Draft from events" (POST …/infer), its mode and
 * environments, save and delete, and its violations over the last 24 hours: counts per reason and the
 * newest violating events.
 */
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { api, ApiError, seg } from './api';
import { attempt } from './settings-credentials';
import { ErrorBox, Status, Time, useRequest } from './ui';

type Mode = 'observe' | 'enforce';
type Environment = 'production' | 'staging';
interface Plan {
  schema: object;
  mode: Mode;
  environments: Environment[];
  version: number;
  createdAt: string;
}
interface Violations {
  events: number;
  reasons: Array<{ reason: string; count: number }>;
  newest: Array<{ messageId: string; environment: Environment; mode: Mode; receivedAt: string; reasons: string[] }>;
}

export function EventPlan({ org, eventType }: { org: string; eventType: string }): ReactNode {
  const path = `/admin/v1/orgs/${seg(org)}/events/plans/${seg(eventType)}`;
  const plan = useRequest(
    () => api<{ plan: Plan }>('GET', path).then((a) => a.plan, (error: unknown) => (error instanceof ApiError && error.code === 'plan_not_found' ? null : Promise.reject(error))),
    [path],
  );
  const violations = useRequest(() => api<Violations>('GET', `${path}/violations`), [path]);
  const [text, setText] = useState('');
  const [mode, setMode] = useState<Mode>('observe');
  const [environments, setEnvironments] = useState<Environment[]>(['production']);
  const [error, setError] = useState<ApiError>();
  const [note, setNote] = useState<string>();
  useEffect(() => {
    if (plan.data === undefined) return;
    setText(plan.data ? JSON.stringify(plan.data.schema, null, 2) : '');
    setMode(plan.data?.mode ?? 'observe');
    setEnvironments(plan.data?.environments ?? ['production']);
  }, [plan.data]);

  const draft = () =>
    attempt(setError, async () => {
      const answer = await api<{ samples: number; schema: object }>('POST', `${path}/infer`, {});
      setText(JSON.stringify(answer.schema, null, 2));
      setNote(`A draft from the newest ${answer.samples} stored events: edit it, then save.`);
    });
  const save = (event: FormEvent) => {
    event.preventDefault();
    void attempt(setError, async () => {
      let schema: unknown;
      try {
        schema = JSON.parse(text);
      } catch (e) {
        throw new ApiError(400, 'invalid_json', `The schema is not JSON: ${(e as Error).message}`);
      }
      const saved = await api<{ plan: Plan }>('PUT', path, { schema, mode, environments });
      setNote(`Version ${saved.plan.version} is in force for events received from now on.`);
      plan.reload();
    });
  };
  const remove = () =>
    attempt(setError, async () => {
      if (!window.confirm(`Delete the plan of ${eventType}? Its events are no longer checked.`)) return;
      await api('DELETE', path);
      setNote('Deleted: events of this type are no longer checked.');
      plan.reload();
    });
  const toggle = (env: Environment) => setEnvironments((now) => (now.includes(env) ? now.filter((e) => e !== env) : [...now, env]));

  return (
    <section className="card" aria-labelledby="plan-title" data-plan={eventType}>
      <h3 id="plan-title">
        Tracking plan of <code>{eventType}</code>
      </h3>
      <Status request={plan} what="the plan" />
      {plan.data === null ? <p className="muted">No plan: any properties are stored. Write a JSON Schema of the event's own properties, or start from a draft.</p> : null}
      {plan.data ? (
        <p className="muted">
          Version {plan.data.version}, <strong>{plan.data.mode}</strong> on {plan.data.environments.join(' and ')}, since <Time iso={plan.data.createdAt} />.
        </p>
      ) : null}
      <form onSubmit={save} aria-label={`The plan of ${eventType}`}>
        <label>
          JSON Schema of the event's own properties
          <textarea className="code" rows={14} value={text} onChange={(e) => setText(e.target.value)} spellCheck={false} placeholder='{ "type": "object", "required": ["nights"], "properties": { "nights": { "type": "integer" } } }' />
        </label>
        <div className="row">
          <label className="inline">
            Mode{' '}
            <select value={mode} onChange={(e) => setMode(e.target.value as Mode)}>
              <option value="observe">observe: store and count violations</option>
              <option value="enforce">enforce: quarantine violating events</option>
            </select>
          </label>
          {(['production', 'staging'] as const).map((env) => (
            <label className="inline" key={env}>
              <input type="checkbox" checked={environments.includes(env)} onChange={() => toggle(env)} /> {env}
            </label>
          ))}
          <button type="button" className="small secondary" onClick={() => void draft()}>
            Draft from events
          </button>
          <button type="submit">Save plan</button>
          {plan.data ? (
            <button type="button" className="small secondary" onClick={() => void remove()}>
              Delete plan
            </button>
          ) : null}
        </div>
      </form>
      {note ? <p role="status">{note}</p> : null}
      <ErrorBox error={error} />
      <h4>Violations in the last 24 hours</h4>
      <Status request={violations} what="the violations" />
      {violations.data && violations.data.events === 0 ? <p className="muted">None.</p> : null}
      {violations.data && violations.data.events > 0 ? (
        <>
          <table aria-label="Violations per reason">
            <thead>
              <tr>
                <th scope="col">Reason</th>
                <th scope="col">Events</th>
              </tr>
            </thead>
            <tbody>
              {violations.data.reasons.map((r) => (
                <tr key={r.reason}>
                  <td>
                    <code>{r.reason}</code>
                  </td>
                  <td className="number">{r.count.toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted">
            Newest: {violations.data.newest.map((n) => `${n.messageId} (${n.mode === 'enforce' ? 'quarantined' : 'stored'})`).join(', ')}
          </p>
        </>
      ) : null}
    </section>
  );
}
