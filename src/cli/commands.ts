/**
 * Every command of `audiencectl`: its arguments, the options it takes, the admin API operations it
 * calls (OpenAPI operationIds: test/cli/coverage.test.ts fails when an admin operation has no command),
 * a one-line summary and an example. Help, completion scripts and the usage line are made from it.
 */
import type { Command } from './commands/command.js';
import { API_COMMANDS } from './commands/api.js';
import { BACKUP_COMMANDS } from './commands/backup.js';
import { CONTACT_COMMANDS } from './commands/contacts.js';
import { ERASURE_COMMANDS } from './commands/erasures.js';
import { EVENT_COMMANDS } from './commands/events.js';
import { FLOW_COMMANDS } from './commands/flows.js';
import { ORG_COMMANDS } from './commands/orgs.js';
import { queryCommands } from './commands/queries.js';
import { TOKEN_COMMANDS } from './commands/tokens.js';
import { TOPIC_COMMANDS } from './commands/topics.js';
import { PLAN_COMMANDS } from './commands/plans.js';
import { TRIGGER_COMMANDS } from './commands/triggers.js';

export type { Command, Context } from './commands/command.js';

/** In the order help lists them: a noun's commands together, as src/routes/admin/orgs/ has a file per noun. */
export const COMMANDS: Command[] = [
  ...ORG_COMMANDS,
  ...TOKEN_COMMANDS,
  ...EVENT_COMMANDS,
  ...CONTACT_COMMANDS,
  ...ERASURE_COMMANDS,
  ...TOPIC_COMMANDS,
  ...PLAN_COMMANDS,
  ...TRIGGER_COMMANDS,
  ...queryCommands('segment'),
  ...queryCommands('trait'),
  ...FLOW_COMMANDS,
  ...BACKUP_COMMANDS,
  ...API_COMMANDS,
];
