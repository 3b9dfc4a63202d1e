/** Orgs: the list, and a new org whose partner credentials are shown once. */
import { type FormEvent, type ReactNode, useState } from 'react';
import { api } from './api';
import { href } from './route';
import { asApiError, CopyButton, ErrorBox, Status, useRequest } from './ui';
import type { ApiError } from './api';
import type { BatchEnvelope } from '../generated/batch';
import type { Org, OrgCreate } from '../generated/org';

/** What a partner sends with its events (SPEC 4.1): the API shows the secret once, at creation and rotation. */
export type PartnerCredential = Pick<BatchEnvelope, 'partnerId' | 'partnerSecret'>;
/** What a new org's answer holds per environment: the partner credential and the write key for Segment-style SDKs. */
export type NewCredential = PartnerCredential & { writeKey: string };

/** The answer to POST /admin/v1/orgs. */
interface OrgCreated {
  org: Org;
  credentials: Record<'staging' | 'production', NewCredential>;
}

export function OrgsPage(): ReactNode {
  const orgs = useRequest(() => api<{ orgs: Org[] }>('GET', '/admin/v1/orgs'), []);
  const [created, setCreated] = useState<OrgCreated>();
  return (
    <section aria-labelledby="orgs-title">
      <h1 id="orgs-title">Orgs</h1>
      {created ? <CredentialsOnce org={created.org} credentials={created.credentials} onDone={() => setCreated(undefined)} /> : null}
      <Status request={orgs} what="orgs" />
      {orgs.data ? (
        orgs.data.orgs.length === 0 ? (
          <p className="muted">No org yet: create the first one below.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Org</th>
                <th scope="col">Slug</th>
                <th scope="col">Audience API</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {orgs.data.orgs.map((org) => (
                <tr key={org.slug}>
                  <td>
                    <a href={href('orgs', org.slug, 'events')}>{org.name}</a>
                  </td>
                  <td>
                    <code>{org.slug}</code>
                  </td>
                  <td>{org.audienceApi ? 'on' : 'off'}</td>
                  <td>{new Date(org.createdAt).toLocaleDateString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
      <NewOrg
        onCreated={(result) => {
          setCreated(result);
          orgs.reload();
        }}
      />
    </section>
  );
}

function NewOrg({ onCreated }: { onCreated(result: OrgCreated): void }): ReactNode {
  const [slug, setSlug] = useState('');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onCreated(await api<OrgCreated>('POST', '/admin/v1/orgs', { slug, name: name || slug } satisfies OrgCreate));
      setSlug('');
      setName('');
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-org-title">
      <h2 id="new-org-title">New org</h2>
      <label>
        Slug
        <input value={slug} onChange={(e) => setSlug(e.target.value)} required pattern="[a-z][a-z0-9_]{1,39}" placeholder="acme" aria-describedby="slug-help" />
      </label>
      <p id="slug-help" className="muted">
        Lower-case letters, digits and _, starting with a letter: it names the org in URLs, files and trigger SQL, and is never reused.
      </p>
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} placeholder="Acme Inc." maxLength={200} />
      </label>
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create org'}
      </button>
    </form>
  );
}

function CredentialsOnce({ org, credentials, onDone }: OrgCreated & { onDone(): void }): ReactNode {
  return (
    <div className="card warning" role="region" aria-labelledby="credentials-title">
      <h2 id="credentials-title">Partner credentials of {org.name}</h2>
      <p>
        <strong>Shown once.</strong> Only a hash of each secret is kept: copy them now and hand them to the partner. A lost secret is
        replaced by rotating it.
      </p>
      <dl className="credentials">
        {(['production', 'staging'] as const).map((env) => (
          <div key={env}>
            <dt>{env}</dt>
            <dd>
              partnerId <code data-credential={`${env}-id`}>{credentials[env].partnerId}</code>{' '}
              <CopyButton text={credentials[env].partnerId} label={`Copy the ${env} partnerId`} />
            </dd>
            <dd>
              partnerSecret <code data-credential={`${env}-secret`}>{credentials[env].partnerSecret}</code>{' '}
              <CopyButton text={credentials[env].partnerSecret} label={`Copy the ${env} partnerSecret`} />
            </dd>
            <dd>
              writeKey <code data-credential={`${env}-write-key`}>{credentials[env].writeKey}</code>{' '}
              <CopyButton text={credentials[env].writeKey} label={`Copy the ${env} writeKey`} /> (Segment, RudderStack and Jitsu SDKs)
            </dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={onDone}>
        I have copied them
      </button>
    </div>
  );
}
