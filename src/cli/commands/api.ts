// `ztc api METHOD PATH`: any operation of either API through the same transport (local or a saved
// profile) and output, for what has no dedicated command (related lists, posture data, traces...).
import { Command } from 'commander';
import { parseFormat, print } from '../output.js';
import { API_PATHS, FABRIC_PATH } from '../../server/api-paths.js';
import { CliError, expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { fileOrValue, resolveRef, withTransport } from './resources.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function apiCommand(): Command {
  return targetOptions(
    new Command('api').description('call any API operation: ztc api GET /identities/ID/services (paths are management ones unless they start with /edge/ or /fabric/; a name works where an id goes)'),
  )
    .argument('<method>', METHODS.join(', '))
    .argument('<path>', 'e.g. /summary, /identities/ID/posture-data, /edge/client/v1/protocols, /fabric/v1/links')
    .option('--body <json>', 'request body as JSON, or @file')
    .action(async (method: string, path: string, opts: CommonOpts & { body?: string }) => {
      const m = method.toUpperCase();
      if (!METHODS.includes(m)) throw new CliError(`Unknown method '${method}': use ${METHODS.join(', ')}`);
      let body: unknown;
      if (opts.body !== undefined) {
        try {
          body = JSON.parse(fileOrValue(opts.body));
        } catch (e) {
          throw new CliError(`--body is not JSON: ${(e as Error).message}`);
        }
      }
      // Paths of their own, outside the management API: the other APIs, and the controller's root routes.
      const own = ['/edge/', `${FABRIC_PATH}/`, '/.well-known/', '/health-checks'].some((p) => path.startsWith(p)) || ['/version', '/metrics', FABRIC_PATH].includes(path);
      const full = own ? path : `${API_PATHS.management}${path.startsWith('/') ? '' : '/'}${path}`;
      const reply = await withTransport(opts, async (t) => {
        let r = await t.request(m, full, body);
        // `/identities/laptop-01/posture-data`: an entity named where its id goes is looked up by name,
        // as every other command takes ids or names (only when the path as given found nothing).
        const named = r.status === 404 ? new RegExp(`^${API_PATHS.management}/([a-z-]+)/([^/?]+)(.*)$`).exec(full) : null;
        if (named) {
          const ref = decodeURIComponent(named[2]);
          const id = await resolveRef(t, named[1], ref).catch(() => undefined);
          if (id && id !== ref) r = await t.request(m, `${API_PATHS.management}/${named[1]}/${encodeURIComponent(id)}${named[3]}`, body);
        }
        const ok = expectOk(r, `${m} ${full}`);
        // An answer that is not JSON (/metrics is Prometheus' text format) is printed as it came.
        return { json: ok, text: r.json === undefined && r.text ? r.text : undefined };
      });
      if (reply.text !== undefined) return void process.stdout.write(reply.text.endsWith('\n') ? reply.text : `${reply.text}\n`);
      const format = parseFormat(opts.output);
      const data = reply.json?.data;
      if (format === 'table' && Array.isArray(data) && data.every((x) => typeof x !== 'object' || x === null)) {
        process.stdout.write(data.map(String).join('\n') + (data.length ? '\n' : ''));
        return;
      }
      const columns = Array.isArray(data) && data.length ? Object.keys(data[0] as object).filter((k) => k !== '_links').slice(0, 6) : undefined;
      await print(data ?? {}, format, { columns });
    });
}
