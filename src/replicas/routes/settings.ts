// Longhorn's scheduling settings: read them, change any subset.
import type { FastifyInstance } from 'fastify';
import { zodApp } from '../../http/context.ts';
import { problemResponse } from '../../http/problem.ts';
import { SettingsSchema, SettingsUpdateSchema } from '../schemas.ts';
import type { ReplicaService } from '../service.ts';
import type { DialectSettings } from '../../settings.ts';
import type { ReplicaSettings } from '../settings.ts';
import { sendJson } from '../../http/serialize.ts';
import { TAGS } from './tags.ts';

/** Longhorn's own spelling of GET/PUT /settings/replicas: the same values, changes and history. */
export function settingsRoutes(fastify: FastifyInstance, service: ReplicaService, settings: DialectSettings<ReplicaSettings>): void {
  const app = zodApp(fastify);

  app.get('/replicas/settings', {
    schema: { tags: TAGS, summary: 'Longhorn scheduling settings (names and defaults as in Longhorn)', response: { 200: SettingsSchema } },
  }, async (_request, reply) => sendJson(reply, service.settings));

  app.put('/replicas/settings', {
    schema: {
      tags: TAGS,
      summary: 'Change any subset of the settings',
      description: 'A refused value (unknown name, wrong type, out of range) gives 400 naming the setting and changes nothing.',
      body: SettingsUpdateSchema,
      response: { 200: SettingsSchema, 400: problemResponse('A setting is unknown or its value is refused') },
    },
  }, async (request, reply) => {
    await settings.update(request.body, { by: request.berthPrincipal?.name ?? null });
    return sendJson(reply, service.settings);
  });
}
