/**
 * An org's subscription topics on its settings page (PUT/GET/DELETE …/topics): each with its name on the
 * unsubscribe page and its default (opt-out: subscribed; opt-in: unsubscribed), one added or changed, one
 * deleted — refused while a flow names it, saying which.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { api, type ApiError, seg } from './api';
import { attempt } from './settings-credentials';
import { ErrorBox, Status, Time, useRequest } from './ui';

interface Topic {
  topic: string;
  name: string;
  default: 'subscribed' | 'unsubscribed';
  updatedAt: string;
}

export function Topics({ org }: { org: string }): ReactNode {
  const topics = useRequest(() => api<{ topics: Topic[] }>('GET', `/admin/v1/orgs/${seg(org)}/topics`), [org]);
  const [topic, setTopic] = useState('');
  const [name, setName] = useState('');
  const [status, setStatus] = useState<Topic['default']>('subscribed');
  const [error, setError] = useState<ApiError>();
  const put = (event: FormEvent) => {
    event.preventDefault();
    void attempt(setError, async () => {
      await api('PUT', `/admin/v1/orgs/${seg(org)}/topics/${seg(topic)}`, { name, default: status });
      setTopic('');
      setName('');
      topics.reload();
    });
  };
  const remove = (t: Topic) =>
    attempt(setError, async () => {
      if (!window.confirm(`Delete topic ${t.topic}? Contacts' choices for it are kept, should it come back.`)) return;
      await api('DELETE', `/admin/v1/orgs/${seg(org)}/topics/${seg(t.topic)}`);
      topics.reload();
    });
  const edit = (t: Topic) => {
    setTopic(t.topic);
    setName(t.name);
    setStatus(t.default);
  };
  return (
    <section className="card" aria-labelledby="topics-title">
      <h2 id="topics-title">Subscription topics</h2>
      <p className="muted">
        A flow names its topic; a contact unsubscribed from it, or from <code>all</code>, is never sent that flow's messages. The name is what the unsubscribe page shows.
      </p>
      <Status request={topics} what="the topics" />
      {topics.data ? (
        <table aria-label="Topics">
          <thead>
            <tr>
              <th>Topic</th>
              <th>Name</th>
              <th>Default</th>
              <th>Changed</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {topics.data.topics.map((t) => (
              <tr key={t.topic} data-topic={t.topic}>
                <td>
                  <code>{t.topic}</code>
                </td>
                <td>{t.name}</td>
                <td>{t.default === 'subscribed' ? 'subscribed (opt-out)' : 'unsubscribed (opt-in)'}</td>
                <td>
                  <Time iso={t.updatedAt} />
                </td>
                <td>
                  <button type="button" className="small" onClick={() => edit(t)} aria-label={`Change topic ${t.topic}`}>
                    Change
                  </button>{' '}
                  {t.topic === 'all' ? null : (
                    <button type="button" className="small secondary" onClick={() => void remove(t)} aria-label={`Delete topic ${t.topic}`}>
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <form className="row" onSubmit={put} aria-label="Add or change a topic">
        <label className="inline">
          Topic <input value={topic} onChange={(e) => setTopic(e.target.value)} required pattern="[a-z][a-z0-9_]{0,63}" placeholder="news" />
        </label>
        <label className="inline">
          Name <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} placeholder="Newsletter" />
        </label>
        <label className="inline">
          Default{' '}
          <select value={status} onChange={(e) => setStatus(e.target.value as Topic['default'])}>
            <option value="subscribed">subscribed (opt-out)</option>
            <option value="unsubscribed">unsubscribed (opt-in)</option>
          </select>
        </label>
        <button type="submit">Save topic</button>
      </form>
      <ErrorBox error={error} />
    </section>
  );
}
