// Reads a Prometheus text exposition with Prometheus's own parser (the Python client's
// text_string_to_metric_families, installed by scripts/test-deps.sh), as a scrape would.
import { execFile } from 'node:child_process';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface MetricFamily {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = [{"name": f.name, "type": f.type, "help": f.documentation,
        "samples": [{"name": s.name, "labels": s.labels, "value": s.value if s.value == s.value else None} for s in f.samples]}
       for f in text_string_to_metric_families(sys.stdin.read())]
print(json.dumps(out).replace("Infinity", "1e999"))
`;

export function parseExposition(text: string): Promise<MetricFamily[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-c', PARSE], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`the Prometheus parser refused the exposition: ${stderr || err.message}`));
      resolve(JSON.parse(stdout) as MetricFamily[]);
    });
    child.stdin!.end(text);
  });
}

export const familyOf = (fams: MetricFamily[], name: string) => {
  const f = fams.find((x) => x.name === name || `${x.name}_total` === name);
  if (!f) throw new Error(`no metric family ${name} in the scrape`);
  return f;
};

/** The value of the one sample with these labels (and this sample name, for a histogram's _count/_bucket). */
export function sampleValue(fams: MetricFamily[], family: string, labels: Record<string, string> = {}, sample = family): number | undefined {
  // The parser names a counter's family without its _total suffix, as OpenMetrics does.
  const f = fams.find((x) => x.name === family || `${x.name}_total` === family);
  if (!f) throw new Error(`no metric family ${family} in the scrape`);
  return f.samples.find((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
