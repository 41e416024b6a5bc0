// Loads test/fixtures/cinder-cases: inputs and what real Cinder 21 decided (written from the reference material by
// scripts/reference-fixtures.ts). Not a test by itself.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CaseInput {
  description: string;
  config?: Record<string, unknown>;
  backends?: Record<string, Record<string, unknown>>;
  pools: Array<{ name: string; capabilities: Record<string, unknown>; service?: { availability_zone?: string } }>;
  request: {
    size: number;
    volume_type?: { name?: string; extra_specs?: Record<string, string> };
    availability_zone?: string;
    new_size?: number;
    vol_exists_on?: string;
    operation?: string;
  };
}

export interface ExpectedPool {
  name: string;
  passes_all: boolean;
  state: Record<string, unknown> & { host: string; max_over_subscription_ratio: number };
  capacity_factors?: Record<string, unknown>;
  filters: Record<string, { passes: boolean | null; reason?: string }>;
  spec_standard?: { fits: boolean };
}

export interface Expected {
  chosen: string | null;
  fatal_stage?: string;
  effective_config?: { scheduler_default_filters: string[]; scheduler_default_weighers: string[] };
  pools?: ExpectedPool[];
  schedule?: { chosen: string | null; filtered?: string[]; ordered?: Array<{ name: string; weight: number }>; error?: string };
  weighing?: {
    weighers: Array<{ name: string; multiplier: number; weights?: Array<{ name: string; value: number; normalized: number }> }>;
  };
  get_pools?: { summary: { pools: Array<{ name: string }> }; detail: { pools: Array<{ name: string; capabilities: Record<string, unknown> }> } };
}

export interface CinderCase {
  id: string;
  input: CaseInput;
  expected: Expected;
}

const CASES_DIR = join(import.meta.dirname, '..', 'fixtures', 'cinder-cases');

export function loadCases(): CinderCase[] {
  return readdirSync(CASES_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const c = JSON.parse(readFileSync(join(CASES_DIR, f), 'utf8')) as { id: string; description: string; input: Omit<CaseInput, 'description'>; expected: Expected };
      return { id: c.id, input: { description: c.description, ...c.input }, expected: c.expected };
    });
}

/** The Cinder host of a pool name (host@backend, before '#'). */
export function hostOf(poolName: string): string {
  const i = poolName.indexOf('#');
  return i < 0 ? poolName : poolName.slice(0, i);
}

/**
 * The capability reports Berth receives for a case: one per host, in first-appearance order. The oracle gave every
 * pool volume_backend_name = the part after '@' unless the case's backends say otherwise.
 */
export function reportsFor(input: CaseInput): Array<{ host: string; report: Record<string, unknown> }> {
  const byHost = new Map<string, Record<string, unknown>>();
  for (const pool of input.pools) {
    const host = hostOf(pool.name);
    const legacy = !pool.name.includes('#');
    let report = byHost.get(host);
    if (!report) {
      report = { volume_backend_name: host.split('@')[1] ?? host, ...(input.backends?.[host] ?? {}) };
      if (pool.service?.availability_zone) report.availability_zone = pool.service.availability_zone;
      if (!legacy) report.pools = [];
      byHost.set(host, report);
    }
    if (legacy) Object.assign(report, pool.capabilities);
    else (report.pools as unknown[]).push({ pool_name: pool.name.slice(pool.name.indexOf('#') + 1), ...pool.capabilities });
  }
  return [...byHost].map(([host, report]) => ({ host, report }));
}
