/**
 * `audiencectl erasure …`: erasure receipts.
 */
import { type Command, get, orgPath, seg } from './command.js';

export const ERASURE_COMMANDS: Command[] = [
  { name: 'erasure list', args: ['<slug>'], operations: ['listErasures'], summary: "the org's erasure receipts", example: 'audiencectl erasure list acme', run: get(([slug]) => `${orgPath(slug!)}/erasures`) },
  {
    name: 'erasure get',
    args: ['<slug>', '<erasure-id>'],
    operations: ['getErasure'],
    summary: 'one erasure receipt: what was removed, and when',
    example: 'audiencectl erasure get acme era_…',
    run: get(([slug, id]) => `${orgPath(slug!)}/erasures/${seg(id!)}`),
  },
];
