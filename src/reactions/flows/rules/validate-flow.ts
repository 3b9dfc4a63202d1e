/**
 * A flow definition is checked twice: its shape against schemas/flow.schema.json, then what the
 * schema cannot say: the trigger, segments and topic exist (the first two with a valid version), a schedule's dates are real, production only, webhook
 * targets allowed, a mail server for e-mail, well-formed branch conditions. All problems come back
 * together as 422 invalid_flow.
 */
import { checkWebhookUrl } from '../../channels/target-guard.js';
import { quietHoursProblem } from '../../../core/quiet-hours.js';
import { AppError, type ProblemDetail } from '../../../core/errors.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { Condition, Message } from '../../../generated/message.js';
import { toProblemDetails, validatorFor } from '../../../core/schemas.js';
import type { TriggerStore } from '../../triggers/trigger-store.js';
import { isStoredEventName } from './stored-event.js';
import { scheduleProblem } from './schedule-time.js';

const validateShape = validatorFor<FlowDefinition>('flow.schema.json');

export interface FlowChecks {
  org: string;
  triggers: TriggerStore;
  /** The org's subscription topics (`all` among them). */
  topics: ReadonlySet<string>;
  webhookAllowPrivate: boolean;
  smtpConfigured: boolean;
}

export function checkFlow(body: unknown, checks: FlowChecks): FlowDefinition {
  if (!validateShape(body)) {
    throw new AppError('invalid_flow', 'the flow definition does not match schemas/flow.schema.json', {
      members: { errors: toProblemDetails(validateShape.errors) },
    });
  }
  const flow = body;
  const errors: ProblemDetail[] = [];
  if (flow.environment === 'staging') {
    errors.push({ path: '/environment', message: 'flows run on production events only: event_triggers shows production events' });
  }
  if (flow.category === 'triggered') {
    if (flow.trigger !== undefined && !checks.triggers.live(checks.org, 'trigger', flow.trigger)) {
      errors.push({ path: '/trigger', message: `trigger ${flow.trigger} does not exist or has no valid version (queries/${checks.org}/${flow.trigger}.sql)` });
    }
  } else {
    checkSendToSegment(flow, flow.category, checks, errors);
  }
  const segment = flow.segmentFilter?.segment;
  if (segment !== undefined && !checks.triggers.live(checks.org, 'segment', segment)) {
    errors.push({ path: '/segmentFilter/segment', message: `segment ${segment} does not exist or has no valid version (queries/${checks.org}/segments/${segment}.sql)` });
  }
  if (flow.topic !== undefined && flow.transactional) {
    errors.push({ path: '/topic', message: 'a transactional flow has no topic: it is sent whatever the contact subscribed to (drop topic, or transactional)' });
  } else if (flow.topic !== undefined && !checks.topics.has(flow.topic)) {
    errors.push({ path: '/topic', message: `topic ${flow.topic} does not exist: create it first (PUT /admin/v1/orgs/${checks.org}/topics/${flow.topic})` });
  }
  const quiet = flow.quietHours ? quietHoursProblem(flow.quietHours) : null;
  if (quiet) errors.push({ path: '/quietHours', message: quiet });
  const labels = flow.experiment?.variants.map((v) => v.label) ?? [];
  if (new Set(labels).size !== labels.length) errors.push({ path: '/experiment/variants', message: 'variant labels must be unique' });

  if (flow.message) checkMessage(flow.message, '/message', checks, errors);
  if (flow.steps) checkSteps(flow, checks, errors);
  else {
    if (!flow.message) errors.push({ path: '/message', message: 'a flow sends a message, or has steps (with message steps): give one of the two' });
    if (flow.exit) errors.push({ path: '/exit', message: 'exit ends entries waiting in steps: a flow without steps has none' });
  }
  flow.branches?.forEach((branch, i) => {
    checkCondition(branch.when, `/branches/${i}/when`, errors);
    checkMessage(branch.message, `/branches/${i}/message`, checks, errors);
  });
  flow.experiment?.variants.forEach((variant, i) => {
    if (variant.message) checkMessage(variant.message, `/experiment/variants/${i}/message`, checks, errors);
  });
  if (errors.length > 0) throw new AppError('invalid_flow', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { members: { errors } });
  return flow;
}

/**
 * A flow with steps has them instead of message and branches (each message step has its own), and its
 * variants differ by label only (a step branches on variant.label); a waitUntil or exit names a stored
 * event or a trigger of the org; at least one step sends something.
 */
function checkSteps(flow: FlowDefinition, checks: FlowChecks, errors: ProblemDetail[]): void {
  const steps = flow.steps ?? [];
  if (flow.message) errors.push({ path: '/message', message: 'a flow with steps sends from its message steps ({"message": …}): drop message, or steps' });
  if (flow.branches) errors.push({ path: '/branches', message: 'a flow with steps branches inside a message step ({"message": …, "branches": […]})' });
  flow.experiment?.variants.forEach((variant, i) => {
    if (variant.message) errors.push({ path: `/experiment/variants/${i}/message`, message: 'with steps a variant has no message of its own: branch a message step on variant.label' });
  });
  if (!steps.some((step) => 'message' in step)) errors.push({ path: '/steps', message: 'no step sends a message: add a {"message": …} step' });
  const checkEvent = (name: string, path: string) => {
    if (!isStoredEventName(name) && !checks.triggers.live(checks.org, 'trigger', name)) {
      errors.push({ path, message: `${name} is neither a stored event name (a predefined one such as complete_transaction, or custom_<eventName>) nor a trigger of the org with a valid version` });
    }
  };
  steps.forEach((step, i) => {
    if ('waitUntil' in step) checkEvent(step.waitUntil.event, `/steps/${i}/waitUntil/event`);
    else if ('message' in step) {
      checkMessage(step.message, `/steps/${i}/message`, checks, errors);
      step.branches?.forEach((branch, b) => {
        checkCondition(branch.when, `/steps/${i}/branches/${b}/when`, errors);
        checkMessage(branch.message, `/steps/${i}/branches/${b}/message`, checks, errors);
      });
    }
  });
  if (flow.exit) checkEvent(flow.exit.event, '/exit/event');
}

/** A scheduled or recurring flow: its audience segment exists in this org, its schedule's dates and times are real. */
function checkSendToSegment(flow: FlowDefinition, category: 'scheduled' | 'recurring', checks: FlowChecks, errors: ProblemDetail[]): void {
  const audience = flow.audience?.segment;
  if (audience !== undefined && !checks.triggers.live(checks.org, 'segment', audience)) {
    errors.push({ path: '/audience/segment', message: `segment ${audience} does not exist or has no valid version (queries/${checks.org}/segments/${audience}.sql)` });
  }
  const problem = flow.schedule ? scheduleProblem(category, flow.schedule) : null;
  if (problem) errors.push(problem);
}

function checkMessage(message: Message, path: string, checks: FlowChecks, errors: ProblemDetail[]): void {
  if (message.channel === 'webhook') {
    const refused = checkWebhookUrl(message.url, checks.webhookAllowPrivate);
    if (refused) errors.push({ path: `${path}/url`, message: refused });
  } else if (message.channel === 'email' && !checks.smtpConfigured) {
    errors.push({ path: `${path}/channel`, message: 'the email channel needs SMTP_URL configured' });
  }
}

function checkCondition(when: Condition, path: string, errors: ProblemDetail[]): void {
  const hasValue = Object.hasOwn(when, 'value');
  if (when.op === 'exists' && hasValue) errors.push({ path: `${path}/value`, message: 'exists takes no value' });
  else if (when.op === 'in' && !Array.isArray(when.value)) errors.push({ path: `${path}/value`, message: 'in takes an array' });
  else if (when.op !== 'exists' && !hasValue) errors.push({ path: `${path}/value`, message: `${when.op} needs a value` });
}
