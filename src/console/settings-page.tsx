/**
 * An org's settings (Audience API, rate limit, currency, content fields, not-found status), partner
 * secret rotation, write keys (listed by their last 4 characters, rotated and revoked), and Audience API tokens (created and shown once, listed by their last 3 characters and
 * creator, revoked by id, last 3 or creator).
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { DEFAULT_PROFILE_FIELDS } from '../core/profile-fields';
import { QuietHoursFields } from './quiet-hours-fields';
import { api, type ApiError, seg } from './api';
import type { PartnerCredential } from './orgs-page';
import { asApiError, CopyButton, ErrorBox, Status, Time, useRequest } from './ui';
import type { FrequencyCaps, Org, OrgPatch } from '../generated/org';
import type { Token, TokenCreate, TokenIssued } from '../generated/token';

/** Runs one change; its problem, if any, goes to `setError`. */
async function attempt(setError: (error: ApiError | undefined) => void, work: () => Promise<void>): Promise<void> {
  setError(undefined);
  try {
    await work();
  } catch (e) {
    setError(asApiError(e));
  }
}

export function SettingsPage({ org }: { org: string }): ReactNode {
  const current = useRequest(() => api<{ org: Org }>('GET', `/admin/v1/orgs/${seg(org)}`), [org]);
  return (
    <>
      <Status request={current} what="the org" />
      {current.data ? <SettingsForm key={current.data.org.slug} org={current.data.org} onSaved={current.reload} /> : null}
      <Rotation org={org} />
      <WriteKeys org={org} />
      <Tokens org={org} />
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

function Rotation({ org }: { org: string }): ReactNode {
  const [rotated, setRotated] = useState<PartnerCredential & { environment: string }>();
  const [error, setError] = useState<ApiError>();
  const rotate = (environment: 'production' | 'staging') =>
    attempt(setError, async () => {
      if (!window.confirm(`Replace the ${environment} partner secret? The current one stops working at once.`)) return;
      const answer = await api<{ credentials: PartnerCredential }>('POST', `/admin/v1/orgs/${seg(org)}/credentials/${environment}/rotate`);
      setRotated({ environment, ...answer.credentials });
    });
  return (
    <section className="card" aria-labelledby="rotation-title">
      <h2 id="rotation-title">Partner secrets</h2>
      <div className="row">
        <button type="button" onClick={() => void rotate('production')}>
          Rotate the production secret
        </button>
        <button type="button" onClick={() => void rotate('staging')}>
          Rotate the staging secret
        </button>
      </div>
      <ErrorBox error={error} />
      {rotated ? (
        <div className="warning" role="status">
          <strong>Shown once:</strong> new {rotated.environment} partnerSecret for <code>{rotated.partnerId}</code>: <code data-rotated-secret>{rotated.partnerSecret}</code>{' '}
          <CopyButton text={rotated.partnerSecret} label="Copy the new partnerSecret" />
        </div>
      ) : null}
    </section>
  );
}

type Environment = 'production' | 'staging';
type WriteKeySummaries = Record<Environment, { writeKey: { last4: string; createdAt: string } | null }>;

/** Write keys: what Segment, RudderStack and Jitsu SDKs send with (docs/partners.md, "Moving from Segment"). */
function WriteKeys({ org }: { org: string }): ReactNode {
  const current = useRequest(() => api<{ credentials: WriteKeySummaries }>('GET', `/admin/v1/orgs/${seg(org)}`), [org]);
  const credentials = current.data?.credentials;
  const [issued, setIssued] = useState<{ environment: Environment; writeKey: string }>();
  const [error, setError] = useState<ApiError>();
  const rotate = (environment: Environment) =>
    attempt(setError, async () => {
      if (credentials?.[environment].writeKey && !window.confirm(`Replace the ${environment} write key? SDKs sending with the current one get 401 at once.`)) return;
      const answer = await api<{ writeKey: string }>('POST', `/admin/v1/orgs/${seg(org)}/credentials/${environment}/write-key/rotate`);
      setIssued({ environment, writeKey: answer.writeKey });
      current.reload();
    });
  const revoke = (environment: Environment) =>
    attempt(setError, async () => {
      if (!window.confirm(`Revoke the ${environment} write key? SDKs sending with it get 401 at once.`)) return;
      await api('DELETE', `/admin/v1/orgs/${seg(org)}/credentials/${environment}/write-key`);
      setIssued(undefined);
      current.reload();
    });
  return (
    <section className="card" aria-labelledby="write-keys-title">
      <h2 id="write-keys-title">Write keys</h2>
      <p>For Segment, RudderStack and Jitsu SDKs: point them at this service and give them the write key.</p>
      <Status request={current} what="the write keys" />
      {credentials ? (
        <table>
          <tbody>
            {(['production', 'staging'] as const).map((env) => {
              const key = credentials[env].writeKey;
              return (
                <tr key={env} data-write-key={env}>
                  <th scope="row">{env}</th>
                  <td>
                    {key ? (
                      <>
                        ends in <code>{key.last4}</code>, made <Time iso={key.createdAt} />
                      </>
                    ) : (
                      'none'
                    )}
                  </td>
                  <td>
                    <button type="button" onClick={() => void rotate(env)}>
                      {key ? `Rotate the ${env} write key` : `Issue a ${env} write key`}
                    </button>{' '}
                    {key ? (
                      <button type="button" onClick={() => void revoke(env)}>
                        Revoke
                      </button>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      <ErrorBox error={error} />
      {issued ? (
        <div className="warning" role="status">
          <strong>Shown once:</strong> new {issued.environment} write key <code data-issued-write-key>{issued.writeKey}</code>{' '}
          <CopyButton text={issued.writeKey} label="Copy the new write key" />
        </div>
      ) : null}
    </section>
  );
}

function Tokens({ org }: { org: string }): ReactNode {
  const tokens = useRequest(() => api<{ tokens: Token[] }>('GET', `/admin/v1/orgs/${seg(org)}/tokens`), [org]);
  const [createdBy, setCreatedBy] = useState('');
  const [label, setLabel] = useState('');
  const [issued, setIssued] = useState<string>();
  const [revokeBy, setRevokeBy] = useState<'last3' | 'createdBy'>('last3');
  const [revokeValue, setRevokeValue] = useState('');
  const [error, setError] = useState<ApiError>();
  const create = (event: FormEvent) => {
    event.preventDefault();
    void attempt(setError, async () => {
      const answer = await api<TokenIssued>('POST', `/admin/v1/orgs/${seg(org)}/tokens`, { createdBy, ...(label ? { label } : {}) } satisfies TokenCreate);
      setIssued(answer.token);
      tokens.reload();
    });
  };
  const revoke = (path: string, body?: unknown) =>
    attempt(setError, async () => {
      await api(path.endsWith('/revoke') ? 'POST' : 'DELETE', path, body);
      tokens.reload();
    });
  return (
    <section className="card" aria-labelledby="tokens-title">
      <h2 id="tokens-title">Audience API tokens</h2>
      <Status request={tokens} what="tokens" />
      {tokens.data && tokens.data.tokens.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Token</th>
              <th scope="col">Created by</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {tokens.data.tokens.map((token) => (
              <tr key={token.id} data-token={token.last3}>
                <td>
                  …<code>{token.last3}</code> {token.label ? <span className="muted">{token.label}</span> : null}
                </td>
                <td>{token.createdBy}</td>
                <td>
                  <Time iso={token.createdAt} />
                </td>
                <td>
                  <Time iso={token.lastUsedAt} />
                </td>
                <td>{token.revokedAt ? 'revoked' : token.expiresAt && Date.parse(token.expiresAt) < Date.now() ? 'expired' : 'active'}</td>
                <td>
                  {token.revokedAt ? null : (
                    <button type="button" className="small" onClick={() => void revoke(`/admin/v1/orgs/${seg(org)}/tokens/${seg(token.id)}`)} aria-label={`Revoke the token ending in ${token.last3}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {issued ? (
        <div className="warning" role="status">
          <strong>Shown once:</strong> <code data-issued-token>{issued}</code> <CopyButton text={issued} label="Copy the token" />
        </div>
      ) : null}
      <form className="row" onSubmit={create}>
        <label className="inline">
          Created by (e-mail) <input type="email" value={createdBy} onChange={(e) => setCreatedBy(e.target.value)} required />
        </label>
        <label className="inline">
          Label <input value={label} onChange={(e) => setLabel(e.target.value)} maxLength={100} />
        </label>
        <button type="submit">Create token</button>
      </form>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          void revoke(`/admin/v1/orgs/${seg(org)}/tokens/revoke`, { [revokeBy]: revokeValue });
        }}
      >
        <label className="inline">
          Revoke by{' '}
          <select value={revokeBy} onChange={(e) => setRevokeBy(e.target.value as 'last3' | 'createdBy')}>
            <option value="last3">last 3 characters</option>
            <option value="createdBy">creator</option>
          </select>
        </label>
        <label className="inline">
          Value <input value={revokeValue} onChange={(e) => setRevokeValue(e.target.value)} required />
        </label>
        <button type="submit">Revoke</button>
      </form>
      <ErrorBox error={error} />
    </section>
  );
}
