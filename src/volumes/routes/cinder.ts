// Cinder's block-storage API, for what its clients read from a scheduler: the versions document cinderclient
// negotiates its microversion against, and scheduler-stats/get_pools (the same pools and capabilities as
// GET /pools?detail=true). Answers as Cinder does: microversion headers, request ids, errors as Cinder faults.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, badRequest } from '../../domain-errors.ts';
import { zodApp } from '../../http/context.ts';
import { classifyError } from '../../http/problem.ts';
import { sendJson } from '../../http/serialize.ts';
import {
  CINDER_MAX_VERSION, CINDER_MIN_VERSION, CINDER_UPDATED,
  CinderFaultSchema, CinderGetPoolsQuerySchema, CinderProjectParamsSchema, CinderVersionsSchema, PoolListSchema,
} from '../schemas.ts';
import type { VolumesService } from '../service.ts';

const TAGS = ['volumes'];
const VERSION_HEADER = 'openstack-api-version';

/** A microversion as [major, minor]. */
type Version = readonly [number, number];

const MIN: Version = parseVersionString(CINDER_MIN_VERSION)!;
const MAX: Version = parseVersionString(CINDER_MAX_VERSION)!;
/** mv.POOL_FILTER, mv.RESOURCE_FILTER, mv.POOL_TYPE_FILTER (cinder/api/microversions.py). */
const POOL_FILTER: Version = [3, 28];
const RESOURCE_FILTER: Version = [3, 31];
const POOL_TYPE_FILTER: Version = [3, 35];
/** resource_filters.json's "pool" entry: the filters get_pools takes from 3.31 on. */
const POOL_FILTERS = ['name', 'volume_type'];

function parseVersionString(text: string): Version | null {
  const m = /^([1-9]\d*)\.([1-9]\d*|0)$/.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : null;
}
const atLeast = (v: Version, min: Version) => v[0] > min[0] || (v[0] === min[0] && v[1] >= min[1]);
const show = (v: Version) => `${v[0]}.${v[1]}`;

/** Request.set_api_version_request (cinder/api/openstack/wsgi.py): no header means 3.0; 'latest' the maximum. */
function requestedVersion(header: string | string[] | undefined): Version {
  if (header === undefined) return MIN;
  const text = Array.isArray(header) ? header.join(',') : header;
  const entry = text.split(',').find((h) => h.includes('volume'));
  const words = entry?.trim().split(/\s+/) ?? [];
  if (words.length !== 2) {
    throw badRequest(`API version ${words.length === 0 ? 'None' : entry!.trim()} is not supported on this method.`);
  }
  const asked = words[1]!;
  if (asked === 'latest') return MAX;
  const version = parseVersionString(asked);
  if (!version) throw badRequest(`API Version String ${asked} is of invalid format. Must be of format MajorNum.MinorNum.`);
  if (!atLeast(version, MIN) || !atLeast(MAX, version)) {
    throw new DomainError('UNSUPPORTED_VERSION',
      `Version ${show(version)} is not supported by the API. Minimum is ${show(MIN)} and maximum is ${show(MAX)}.`);
  }
  return version;
}

/** oslo strutils.is_valid_boolstr / bool_from_string(strict=True), as utils.get_bool_param reads ?detail. */
const TRUE_WORDS = ['1', 't', 'true', 'on', 'y', 'yes'];
const FALSE_WORDS = ['0', 'f', 'false', 'off', 'n', 'no'];
function boolParam(name: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  const lower = value.toLowerCase();
  if (TRUE_WORDS.includes(lower)) return true;
  if (FALSE_WORDS.includes(lower)) return false;
  throw badRequest(`Value '${value}' for '${name}' is not a boolean.`);
}

/** wsgi.Fault's names per status; anything else is a computeFault. */
const FAULT_NAMES: Record<number, string> = {
  400: 'badRequest', 401: 'unauthorized', 403: 'forbidden', 404: 'itemNotFound', 405: 'badMethod',
  409: 'conflictingRequest', 413: 'overLimit', 415: 'badMediaType', 501: 'notImplemented', 503: 'serviceUnavailable',
};

const versions = new WeakMap<FastifyRequest, Version>();

/** Headers every answer carries: the request id (cinderclient keeps it), and the microversion it was answered at. */
function cinderHeaders(request: FastifyRequest, reply: FastifyReply): void {
  const id = request.id.startsWith('req-') ? request.id : `req-${request.id}`;
  reply.header('x-openstack-request-id', id).header('x-compute-request-id', id);
  const version = versions.get(request);
  if (version) reply.header('OpenStack-API-Version', `volume ${show(version)}`).header('Vary', 'OpenStack-API-Version');
}

/** Routes under the /volume prefix (their own error and not-found handlers: Cinder's fault shape). */
export function cinderRoutes(scope: FastifyInstance, service: VolumesService): void {
  const app = zodApp(scope);
  scope.addHook('onRequest', async (request) => {
    versions.set(request, requestedVersion(request.headers[VERSION_HEADER]));
  });
  scope.addHook('onSend', async (request, reply) => cinderHeaders(request, reply));
  scope.setErrorHandler((err, request, reply) => {
    const { problem, unexpected } = classifyError(err);
    if (unexpected) request.log.error({ err }, 'unexpected error');
    else request.log.info({ status: problem.status, detail: problem.detail }, 'request refused');
    const fault = FAULT_NAMES[problem.status] ?? 'computeFault';
    return reply.code(problem.status).type('application/json').send({ [fault]: { code: problem.status, message: problem.detail } });
  });
  // Every other path below /volume is Cinder's 404 (a route, so that the app's catch-alls never answer it).
  scope.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], url: '/*', schema: { hide: true }, config: { fallback: true },
    handler: async (_request, reply) =>
      reply.code(404).type('application/json').send({ itemNotFound: { code: 404, message: 'The resource could not be found.' } }),
  });

  const versionsDocument = (request: FastifyRequest) => ({
    versions: [{
      id: 'v3.0',
      status: 'CURRENT',
      version: CINDER_MAX_VERSION,
      min_version: CINDER_MIN_VERSION,
      updated: CINDER_UPDATED,
      links: [
        { rel: 'describedby', type: 'text/html', href: 'https://docs.openstack.org/' },
        { rel: 'self', href: `${request.protocol}://${request.host}/volume/v3/` },
      ],
      'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.volume+json;version=3' }],
    }],
  });

  app.get('/', {
    schema: {
      tags: TAGS,
      summary: 'Cinder\'s API versions (what cinderclient negotiates its microversion against)',
      description: `Answers 300 Multiple Choices as Cinder does: API v3, microversions ${CINDER_MIN_VERSION} to ${CINDER_MAX_VERSION}.`,
      response: { 300: CinderVersionsSchema },
    },
  }, async (request, reply) => reply.code(300).send(versionsDocument(request)));

  app.get('/v3/:project_id/scheduler-stats/get_pools', {
    schema: {
      tags: TAGS,
      summary: 'Cinder\'s get_pools: the pools the scheduler knows, as GET /pools (cinder get-pools [--detail] [--filters …])',
      description: 'detail takes Cinder\'s boolean words (True, false, 1, …). Filters by microversion as Cinder: none below ' +
        '3.28, any capability from 3.28, only name and volume_type from 3.31 (volume_type from 3.35). volume_type takes ' +
        'what GET /pools?volume_type= takes, and the dict cinderclient sends for --filters volume_type={key:value}.',
      params: CinderProjectParamsSchema,
      querystring: CinderGetPoolsQuerySchema,
      response: { 200: PoolListSchema, 400: CinderFaultSchema },
    },
  }, async (request, reply) => {
    const version = versions.get(request)!;
    const { detail: detailText, ...params } = request.query;
    const detail = boolParam('detail', detailText);
    let filters: Record<string, string> = { ...params };
    if (atLeast(version, RESOURCE_FILTER)) {
      delete filters.all_tenants; // cinderclient may add it; Cinder ignores it here
      const invalid = Object.keys(filters).filter((k) => !POOL_FILTERS.includes(k));
      if (invalid.length > 0) throw badRequest(`Invalid filters ${invalid.join(',')} are found in query options.`);
    } else if (!atLeast(version, POOL_FILTER)) {
      filters = {};
    }
    if (!atLeast(version, POOL_TYPE_FILTER)) delete filters.volume_type;
    const { name, volume_type, ...capabilities } = filters;
    const pools = service.listPools({ name, volume_type, filters: capabilities });
    return sendJson(reply, { pools: service.poolViews(pools, detail) });
  });
}
