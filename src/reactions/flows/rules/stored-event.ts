/** Whether a `waitUntil` or `exit` event of a flow names a stored event or a trigger (validate-flow.ts, the steps). */
/** Names a stored event (events.event_name) rather than a trigger: predefined names and custom_*. */
const STORED_EVENT = /^(page_view|product_view|add_to_cart|remove_from_cart|update_cart|cart|complete_transaction|registration|authentication|favorite|waitlist|search|identify|alias|custom_[\s\S]{1,38})$/;

export function isStoredEventName(name: string): boolean {
  return STORED_EVENT.test(name);
}
