/** The OpenAPI tag of every volumes route. */
export const TAGS = ['volumes'];
