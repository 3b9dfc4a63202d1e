/** What every flow form does on Save: a new flow is created (POST), a saved one replaced (PUT); then its page opens. */
import { api, seg } from './api';
import { go, href } from './route';

export async function saveFlow(org: string, savedId: string | undefined, definition: { id: string }): Promise<void> {
  if (savedId === undefined) await api('POST', `/admin/v1/orgs/${seg(org)}/flows`, definition);
  else await api('PUT', `/admin/v1/orgs/${seg(org)}/flows/${seg(savedId)}`, definition);
  go(href('orgs', org, 'flows', definition.id));
}
