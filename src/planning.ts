// Capacity planning's bounds, the same in every dialect: how far headroom counts, and how much one what-if
// simulation may do before it is refused (413 for too many steps, 422 past its time budget).

/** Headroom's `max` when the request names none. */
export const HEADROOM_MAX_DEFAULT = 100_000;
/** The largest `max` a headroom request may ask for. */
export const HEADROOM_MAX_LIMIT = 1_000_000;
/** Steps one simulation may take. */
export const SIMULATION_MAX_STEPS = 10_000;
/** Milliseconds of the app's clock one simulation may run. */
export const SIMULATION_BUDGET_MS = 5_000;
