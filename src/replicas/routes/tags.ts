/** The OpenAPI tag of every replicas route. */
export const TAGS = ['replicas'];
