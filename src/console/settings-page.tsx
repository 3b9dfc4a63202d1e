/**
 * An org's settings (Audience API, rate limit, currency, content fields, not-found status), then its
 * credentials (settings-credentials.tsx) and its subscription topics (settings-topics.tsx).
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { DEFAULT_PROFILE_FIELDS } from '../core/profile-fields';
import { QuietHoursFields } from './quiet-hours-fields';
import { api, type ApiError, seg } from './api';
import { attempt, Rotation, Tokens, WriteKeys } from './settings-credentials';
import { Topics } from './settings-topics';
import { ErrorBox, Status, useRequest } from './ui';
import type { FrequencyCaps, Org, OrgPatch } from '../generated/org';

export function SettingsPage({ org }: { org: string }): ReactNode {
  const current = useRequest(() => api<{ org: Org }>('GET', `/admin/v1/orgs/${seg(org)}`), [org]);
  return (
    <>
      <Status request={current} what="the org" />
      {current.data ? <SettingsForm key={current.data.org.slug} org={current.data.org} onSaved={current.reload} /> : null}
      <Rotation org={org} />
      <WriteKeys org={org} />
      <Tokens org={org} />
      <Topics org={org} />
    </>
  );
}

function SettingsForm({ org, onSaved }: { org: Org; onSaved(): void }): ReactNode {
  const [name, setName] = useState(org.name);
  const [audienceApi, setAudienceApi] = useState(org.audienceApi);
  const [rateLimit, setRateLimit] = useState(org.rateLimit);
  const [currencySymbol, setCurrencySymbol] = useState(org.currencySymbol);
  const [fields, setFields] = useState(org.contentFields);
  const [notFoundStatus, setNotFoundStatus] = useState(org.notFoundStatus);
  const [caps, setCaps] = useState<FrequencyCaps>(org.frequencyCaps ?? []);
  const [quietHours, setQuietHours] = useState(org.quietHours);
  const [timeZone, setTimeZone] = useState(org.timeZone ?? 'UTC');
  const setCap = (i: number, change: Partial<FrequencyCaps[number]>) => setCaps(caps.map((c, j) => (j === i ? { ...c, ...change } : c)));
  const [error, setError] = useState<ApiError>();
  const [saved, setSaved] = useState(false);
  const available = [...new Set([...DEFAULT_PROFILE_FIELDS, ...org.contentFields])];
  const save = (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    void attempt(setError, async () => {
      // Content fields keep the order of the list shown.
      const contentFields = available.filter((field) => fields.includes(field));
      await api('PATCH', `/admin/v1/orgs/${seg(org.slug)}`, { name, audienceApi, rateLimit, currencySymbol, contentFields, notFoundStatus, frequencyCaps: caps, quietHours: quietHours ?? null, timeZone } satisfies OrgPatch);
      setSaved(true);
      onSaved();
    });
  };
  return (
    <form className="card" onSubmit={save} aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <label>
        Name <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
      </label>
      <label className="inline">
        <input type="checkbox" checked={audienceApi} onChange={(e) => setAudienceApi(e.target.checked)} /> Audience API enabled
      </label>
      <div className="row">
        <label className="inline">
          Rate limit (requests/s) <input type="number" min="1" max="100000" value={rateLimit} onChange={(e) => setRateLimit(Number(e.target.value))} />
        </label>
        <label className="inline">
          Currency symbol <input value={currencySymbol} onChange={(e) => setCurrencySymbol(e.target.value)} maxLength={8} required />
        </label>
        <label className="inline">
          Unknown contact answers{' '}
          <select value={notFoundStatus} onChange={(e) => setNotFoundStatus(Number(e.target.value) as Org['notFoundStatus'])}>
            <option value={404}>404</option>
            <option value={400}>400</option>
          </select>
        </label>
      </div>
      <fieldset>
        <legend>Content fields (what the Audience API returns)</legend>
        <div className="checks">
          {available.map((field) => (
            <label className="inline" key={field}>
              <input type="checkbox" checked={fields.includes(field)} onChange={(e) => setFields(e.target.checked ? [...fields, field] : fields.filter((f) => f !== field))} />{' '}
              <code>{field}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>Frequency caps (per contact, across the org's marketing flows)</legend>
        {caps.map((cap, i) => (
          <div className="row" key={i} data-cap={i}>
            <label className="inline">
              At most (messages) <input type="number" min="1" max="100000" value={cap.maxSends} onChange={(e) => setCap(i, { maxSends: Number(e.target.value) })} />
            </label>
            <label className="inline">
              Within (seconds) <input type="number" min="60" max="31536000" value={cap.withinSeconds} onChange={(e) => setCap(i, { withinSeconds: Number(e.target.value) })} />
            </label>
            <label className="inline">
              Channel{' '}
              <select
                value={cap.channel ?? ''}
                onChange={(e) => {
                  const { channel: _old, ...rest } = cap;
                  setCaps(caps.map((c, j) => (j === i ? (e.target.value ? { ...rest, channel: e.target.value as 'email' } : rest) : c)));
                }}
              >
                <option value="">every channel</option>
                <option value="email">email</option>
                <option value="webhook">webhook</option>
                <option value="outbox">outbox</option>
              </select>
            </label>
            <button type="button" className="small" onClick={() => setCaps(caps.filter((_, j) => j !== i))}>
              Remove cap
            </button>
          </div>
        ))}
        <button type="button" className="small" onClick={() => setCaps([...caps, { maxSends: 3, withinSeconds: 86400 }])}>
          Add cap
        </button>
      </fieldset>
      <fieldset className="row">
        <legend>Quiet hours (messages decided then are sent when they end)</legend>
        <QuietHoursFields value={quietHours} onChange={setQuietHours} label="Quiet hours" />
        <label className="inline">
          The org's time zone (for contacts whose own is unknown) <input value={timeZone} onChange={(e) => setTimeZone(e.target.value)} list="quiet-hours-zones" required />
        </label>
      </fieldset>
      <ErrorBox error={error} />
      {saved ? (
        <p role="status" className="ok">
          Saved.
        </p>
      ) : null}
      <button type="submit">Save settings</button>
    </form>
  );
}
