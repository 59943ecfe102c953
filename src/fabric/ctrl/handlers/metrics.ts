// Metrics: what a router measures, of which path costs use its links' latency.
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

/**
 * Metrics (every `metrics.reportInterval`, a minute by default): of all a router measures, path costs
 * use its links' latency, as upstream's do (`link.<id>.latency` plus `queue_time`, means in ns).
 */
export async function metrics(r: CtrlRouter, m: Message) {
  const { histograms } = decode(Schemas.Metrics, m.body);
  const mean = (name: string) => {
    const h = (histograms as Record<string, Buffer>)[name];
    return h ? Number(decode(Schemas.Histogram, h).mean ?? 0) : undefined;
  };
  for (const link of r.network.linksOf(r.routerId)) {
    const latency = mean(`link.${link.id}.latency`);
    if (latency === undefined) continue;
    await r.network.linkLatency(link, r.routerId, latency + (mean(`link.${link.id}.queue_time`) ?? 0));
  }
}
