// The service's refusals as problem+json.
import { ProblemError } from '../../http/problem.ts';
import { ServiceError } from '../service.ts';

/** Runs a service call; a ServiceError becomes the problem it describes. */
export function orProblem<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    throw new ProblemError(err.status, err.slug, err.status === 404 ? 'Not Found' : 'Conflict', err.message);
  }
}
