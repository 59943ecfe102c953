// How upstream writes hex values of posture checks and responses, so ztc shows and compares the same
// text: MAC addresses as bare lower-case hex ("AA:BB:CC:DD:EE:FF" is "aabbccddeeff"), process hashes
// and signer fingerprints lower-case (cleaned of separators in responses).

/** Lower case, everything but hex digits dropped (upstream's CleanHexString). */
export const cleanHex = (s: unknown) => String(s ?? '').toLowerCase().replace(/[^a-f0-9]+/g, '');

import { sortedSet } from '../../store/json.js';

const lower = (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : s);

/**
 * A check's stored fields as upstream stores and shows them: MAC checks' addresses cleaned, a PROCESS
 * check's hashes and signer fingerprint lower-cased (PROCESS_MULTI's keep their case, as upstream's),
 * and every list that upstream keeps as a set sorted without repeats.
 * Applied on write and on read, so rows written before show the same.
 */
export function normaliseCheckData(typeId: string, data: Record<string, unknown>): Record<string, unknown> {
  // Upstream keeps each of these lists as a string set: no repeats, in byte order.
  const set = (l: unknown, f: (s: unknown) => unknown = (s) => s) => (Array.isArray(l) ? sortedSet(l.map(f)) : l);
  switch (typeId) {
    case 'MAC':
      return { ...data, macAddresses: set(data.macAddresses, cleanHex) };
    case 'DOMAIN':
      return { ...data, domains: set(data.domains) };
    case 'OS':
      return { ...data, operatingSystems: Array.isArray(data.operatingSystems) ? data.operatingSystems.map((o: Record<string, unknown>) => ({ ...o, versions: set(o.versions) })) : data.operatingSystems };
    case 'PROCESS': {
      if (!data.process || typeof data.process !== 'object') return data;
      const p = data.process as Record<string, unknown>;
      return { ...data, process: { ...p, ...('hashes' in p ? { hashes: set(p.hashes, lower) } : {}), ...('signerFingerprint' in p ? { signerFingerprint: lower(p.signerFingerprint) } : {}) } };
    }
    case 'PROCESS_MULTI':
      return {
        ...data,
        processes: Array.isArray(data.processes)
          ? data.processes.map((p: Record<string, unknown>) => ({ ...p, ...('hashes' in p ? { hashes: set(p.hashes) } : {}), ...('signerFingerprints' in p ? { signerFingerprints: set(p.signerFingerprints) } : {}) }))
          : data.processes,
      };
    default:
      return data;
  }
}
