// Per-target gauges (a series per pool, disk, backend or node) written straight to the exposition text at scrape
// time. prom-client's Gauge keys every set() by a hash of its labels and formats every series again in the registry;
// at 10,000 pools × 6 gauges that was most of a 220 ms scrape. Here one pass over the targets emits every gauge of a
// group, each line is built once, and label values are escaped only when they need it.
import { Registry } from 'prom-client';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const NEEDS_ESCAPE = /[\\"\n]/;

export interface GaugeGroup {
  /** The gauges of the group, in the order their values are emitted. */
  gauges: ReadonlyArray<{ name: string; help: string }>;
  labelNames: readonly string[];
  /** Called at every scrape: emit(labelValues, values) once per target, one value per gauge (in `gauges` order). */
  collect(emit: (labelValues: readonly string[], values: readonly number[]) => void): void;
}

function escapeLabelValue(value: string): string {
  return NEEDS_ESCAPE.test(value) ? value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"') : value;
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Prometheus's spelling of a sample value. */
function sampleValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function render(group: GaugeGroup): string {
  const lines = group.gauges.map((g) => [`# HELP ${g.name} ${escapeHelp(g.help)}`, `# TYPE ${g.name} gauge`]);
  const names = group.labelNames;
  group.collect((labelValues, values) => {
    let labels = '{';
    for (let i = 0; i < names.length; i++) labels += `${i > 0 ? ',' : ''}${names[i]}="${escapeLabelValue(labelValues[i]!)}"`;
    labels += '} ';
    for (let g = 0; g < lines.length; g++) lines[g]!.push(group.gauges[g]!.name + labels + sampleValue(values[g]!));
  });
  return lines.map((l) => l.join('\n')).join('\n\n');
}

/** prom-client's registry plus gauge groups rendered by Berth at scrape time (see the file's comment). */
export class BerthRegistry extends Registry {
  readonly #groups: GaugeGroup[] = [];
  readonly #names = new Set<string>();

  registerGaugeGroup(group: GaugeGroup): void {
    for (const label of group.labelNames) if (!LABEL_NAME.test(label)) throw new Error(`invalid label name ${label}`);
    for (const { name } of group.gauges) {
      if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${name}`);
      if (this.#names.has(name) || this.getSingleMetric(name)) throw new Error(`A metric with the name ${name} has already been registered.`);
      this.#names.add(name);
    }
    this.#groups.push(group);
  }

  override registerMetric<T extends string>(metric: Parameters<Registry['registerMetric']>[0] & { name: string }): void {
    if (this.#names.has(metric.name)) throw new Error(`A metric with the name ${metric.name} has already been registered.`);
    super.registerMetric<T>(metric);
  }

  override async metrics(): Promise<string> {
    const text = await super.metrics();
    if (this.#groups.length === 0) return text;
    return `${text}\n${this.#groups.map(render).join('\n\n')}\n`;
  }
}
