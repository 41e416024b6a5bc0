// A dialect's runtime settings: validated as the start-up options are, versioned (a generation, If-Match), kept in
// the store with their history, and announced to the dialect when they change — so that changing
// max_over_subscription_ratio (say) takes effect for the next decision without a restart. No HTTP here
// (src/http/settings-routes.ts serves them); the start-up configuration gives the values until the first change.
import type { z } from 'zod';
import { DomainError, type FieldError } from './domain-errors.ts';
import { WRITE_ATTEMPTS } from './store/follow.ts';
import { StoreConflictError, type AsyncStore, type StoredRecord } from './store/store.ts';

export type SettingsDialect = 'volumes' | 'placement' | 'replicas';

/** Store kind of the settings records (one per dialect, keyed by dialect). */
export const KIND_SETTINGS = 'settings';
/** The history keeps this many changes (the oldest go first). */
export const HISTORY_LIMIT = 1000;

export interface SettingsChange {
  at: string;
  /** The caller's token name or JWT subject; null without authentication. */
  by: string | null;
  changes: Record<string, { from: unknown; to: unknown }>;
}

interface StoredSettings<T> {
  values: T;
  history: SettingsChange[];
}

export interface SettingsOptions<T extends Record<string, unknown>> {
  dialect: SettingsDialect;
  /**
   * Validates a PUT body: every key optional, unknown keys refused (a strict partial object). Its output is the
   * settings' own representation (e.g. the config schema's, with strings coerced).
   */
  patch: z.ZodType<Partial<T>>;
  /** The values until the first change (the start-up configuration). */
  initial: T;
  store: AsyncStore;
  now: () => number;
}

/** One settings view: values, generation and history; `onChange` listeners see every new value set. */
export class DialectSettings<T extends Record<string, unknown>> {
  readonly dialect: SettingsDialect;
  readonly #patch: z.ZodType<Partial<T>>;
  readonly #store: AsyncStore;
  readonly #now: () => number;
  #values: T;
  #history: SettingsChange[] = [];
  /** 0 until the first change is stored. */
  #generation = 0;
  readonly #listeners: Array<(values: Readonly<T>) => void> = [];
  /** Updates of one instance run one after another (each reads the generation the previous one wrote). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: SettingsOptions<T>) {
    this.dialect = options.dialect;
    this.#patch = options.patch;
    this.#store = options.store;
    this.#now = options.now;
    this.#values = Object.freeze({ ...options.initial });
  }

  get values(): Readonly<T> {
    return this.#values;
  }

  get generation(): number {
    return this.#generation;
  }

  get history(): readonly SettingsChange[] {
    return this.#history;
  }

  onChange(listener: (values: Readonly<T>) => void): void {
    this.#listeners.push(listener);
  }

  /** Reads the stored settings (a changed value survives a restart: the stored one wins over the start-up one). */
  async load(): Promise<void> {
    this.apply(await this.#store.get<StoredSettings<T>>(KIND_SETTINGS, this.dialect));
  }

  /** Takes a stored record as the current settings (at load, and for another instance's change from the feed). */
  apply(record: StoredRecord<StoredSettings<T>> | undefined): void {
    if (!record || record.generation <= this.#generation) return;
    this.#generation = record.generation;
    this.#history = record.value.history;
    this.#set({ ...this.#values, ...record.value.values });
  }

  /**
   * Validates and applies a subset of the settings. `ifMatch`: the generation the caller read; when it changed,
   * nothing is written (PRECONDITION_FAILED). Returns the settings in force afterwards.
   */
  update(body: unknown, options: { ifMatch?: number; by: string | null }): Promise<{ values: Readonly<T>; generation: number }> {
    const run = this.#queue.then(() => this.#update(body, options));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #update(body: unknown, options: { ifMatch?: number; by: string | null }): Promise<{ values: Readonly<T>; generation: number }> {
    const parsed = this.#patch.safeParse(body);
    if (!parsed.success) throw invalid(this.dialect, parsed.error);
    const patch = parsed.data;
    for (let attempt = 0; ; attempt++) {
      if (options.ifMatch !== undefined && options.ifMatch !== this.#generation) {
        throw new DomainError('PRECONDITION_FAILED',
          `The ${this.dialect} settings are at generation ${this.#generation}, not ${options.ifMatch}: read them again`,
          { generation: this.#generation });
      }
      const changes: SettingsChange['changes'] = {};
      for (const [key, to] of Object.entries(patch)) {
        const from = this.#values[key];
        if (!sameValue(from, to)) changes[key] = { from, to };
      }
      if (Object.keys(changes).length === 0) return { values: this.#values, generation: this.#generation };
      const values = { ...this.#values, ...patch } as T;
      const entry: SettingsChange = { at: new Date(this.#now()).toISOString(), by: options.by, changes };
      const history = [...this.#history, entry].slice(-HISTORY_LIMIT);
      try {
        const [generation] = await this.#store.commit(
          [{ kind: KIND_SETTINGS, key: this.dialect, value: { values, history } satisfies StoredSettings<T> }],
          [{ kind: KIND_SETTINGS, key: this.dialect, generation: this.#generation }],
        );
        this.#generation = generation!;
        this.#history = history;
        this.#set(values);
        return { values: this.#values, generation: this.#generation };
      } catch (err) {
        // Another instance changed them: take its settings, then apply this change on top (or refuse under If-Match).
        if (!(err instanceof StoreConflictError) || attempt + 1 >= WRITE_ATTEMPTS) throw err;
        await this.load();
      }
    }
  }

  #set(values: T): void {
    this.#values = Object.freeze(values);
    for (const listener of this.#listeners) listener(this.#values);
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A 400 naming each refused setting and what is allowed, in the start-up options' words. */
function invalid(dialect: SettingsDialect, error: z.ZodError): DomainError {
  const errors: FieldError[] = error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return { path: issue.keys.join(', '), message: `unknown ${dialect} setting` };
    const allowed = 'values' in issue && Array.isArray(issue.values) ? ` (allowed: ${issue.values.join(', ')})` : '';
    return { path: issue.path.map(String).join('.'), message: `${issue.message}${allowed}` };
  });
  return new DomainError('BAD_REQUEST', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
}
