/**
 * An org's credentials on its settings page: partner secret rotation, write keys (listed by their last
 * 4 characters, rotated and revoked), and Audience API tokens (created and shown once, listed by their
 * last 3 characters and creator, revoked by id, last 3 or creator).
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { api, type ApiError, seg } from './api';
import type { PartnerCredential } from './orgs-page';
import { asApiError, CopyButton, ErrorBox, Status, Time, useRequest } from './ui';
import type { Token, TokenCreate, TokenIssued } from '../generated/token';

/** Runs one change; its problem, if any, goes to `setError`. */
export async function attempt(setError: (error: ApiError | undefined) => void, work: () => Promise<void>): Promise<void> {
  setError(undefined);
  try {
    await work();
  } catch (e) {
    setError(asApiError(e));
  }
}

export function Rotation({ org }: { org: string }): ReactNode {
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
export function WriteKeys({ org }: { org: string }): ReactNode {
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

export function Tokens({ org }: { org: string }): ReactNode {
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
