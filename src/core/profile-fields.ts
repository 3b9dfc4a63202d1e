/** Fields of the default profile view (SPEC 6.1), in their default order. */
export const DEFAULT_PROFILE_FIELDS = [
  'email_address',
  'first_name',
  'last_name',
  'user_id',
  'address_city',
  'address_state',
  'address_country',
  'campaigns_received',
  'flow_variant_membership',
  'total_lifetime_value',
  'total_lifetime_value_jde',
  'last_purchase_date',
  'order_count',
  'first_seen_at',
  'last_seen_at',
] as const;

/** Fields every profile has that are not content fields unless an org asks for them. */
export const OPTIONAL_PROFILE_FIELDS = ['timezone'] as const;
