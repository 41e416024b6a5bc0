/** Responses are built by us and can be large (explain, 1,000 nodes): serialise them directly, not through zod. */
export const plainJson = () => (data: unknown) => JSON.stringify(data);
