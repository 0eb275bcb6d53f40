/** The activity entry types of service-spec part 2; level_up entries are written by the XP service itself. */
export const ACTIVITY_TYPES = ["loan_created", "loan_repaid", "vault_deposit", "vault_withdraw", "guardian_added", "level_up"] as const;

export type ActivityType = (typeof ACTIVITY_TYPES)[number];

/** Activity types that earn XP. */
export type XpActivityType = Exclude<ActivityType, "level_up">;
