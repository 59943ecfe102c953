// ztc events --follow: the controller's live events (GET /events, server-sent events), one line each
// for people or one JSON object a line (-o json) for scripts. ztc audit: the stored events (GET
// /audit-events), answering "who changed X, when" for the retention window.
import { Command } from 'commander';
import { parseFormat, print } from '../output.js';
import { CliError, expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';
type Ev = Record<string, any>;

const collect = (v: string, prev: string[]) => [...prev, ...v.split(',').map((s) => s.trim()).filter(Boolean)];

/** One line for people: when, what kind, who, which entity or session, and the detail that matters. */
export function eventLine(e: Ev): string {
  const time = String(e.timestamp ?? '').replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  const cols: string[] = [time];
  switch (e.namespace) {
    case 'entityChange': {
      const a = e.metadata?.author;
      const who = a?.type === 'identity' ? a.name : 'controller';
      const via = e.metadata?.source?.type === 'local' ? ` (local, ${e.metadata.source.osUser}@${e.metadata.source.host})` : e.metadata?.source?.remoteAddr ? ` from ${e.metadata.source.remoteAddr}` : '';
      cols.push(`${e.entityType} ${e.action ?? e.eventType}`, `${e.entityName ?? ''} [${e.entityId}]`.trim(), `by ${who}${via}`, changedFields(e));
      break;
    }
    case 'authentication':
      cols.push(`login ${e.event_type}`, `${e.type}${e.username ? ` ${e.username}` : ''}${e.identity_id ? ` [${e.identity_id}]` : ''}`, `from ${e.remote_address}`, `${e.reason ?? ''}${e.failure ? ` (${e.failure})` : ''}`);
      break;
    case 'edge.apiSessions':
      cols.push(`api-session ${e.event_type}`, e.id, `identity ${e.identity_id}`, e.ip_address ? `from ${e.ip_address}` : (e.reason ?? ''));
      break;
    case 'edge.sessions':
      cols.push(`session ${e.event_type}`, `${e.session_type}${e.id ? ` ${e.id}` : ''}`, `identity ${e.identity_name ?? e.identity_id}`, `service ${e.service_name ?? e.service_id}`, grantLine(e.granted_by), missingLine(e.missing), e.reason ?? '');
      break;
    case 'fabric.circuits':
      // A failed dial (fabric/dial-failures.ts): its cause and what the SDK was told instead of a grant.
      cols.push(`circuit ${e.event_type}`, e.circuit_id, `identity ${e.client_id}`, `service ${e.service_id}`, `path ${(e.path?.nodes ?? []).join('>')}`, e.failure_cause ? `${e.failure_cause}: ${e.failure_reason ?? ''}` : grantLine(e.granted_by));
      break;
    case 'enrollment':
      cols.push(`enrollment ${e.event_type}`, `${e.method}${e.identity_id ? ` [${e.identity_id}]` : e.router_id ? ` [router ${e.router_id}]` : ''}`, `from ${e.remote_address}`, e.reason ?? '');
      break;
    case 'posture': {
      // denied: refused for posture; reported: granted, report-only checks failing.
      const checks = ((e.checks ?? []) as Ev[]).map((c) => `${c.name}${c.report_only ? ' (report-only)' : ''}`).join(', ');
      cols.push(`posture ${e.event_type}`, `${e.session_type} ${e.service_name ?? ''} [${e.service_id}]`, `identity ${e.identity_id}`, `failing ${checks}`);
      break;
    }
    case 'tls':
      cols.push(`tls ${e.event_type}`, `${e.listener} port`, `from ${e.remote_address}`, `${e.reason}${e.error ? ` ${e.error}` : ''}`, e.count > 1 ? `x${e.count}` : '');
      break;
    case 'pki':
      cols.push(
        `pki ${e.event_type}`,
        `${e.certificate}${e.reason ? ` (${e.reason})` : ''}`,
        e.error ?? '',
        e.kid ? `kid ${e.previous_kid ? `${e.previous_kid} -> ` : ''}${e.kid}` : '',
        e.not_after ? `until ${e.not_after}` : '',
        e.renews_at ? `renews at ${e.renews_at}` : '',
      );
      break;
    case 'admin':
      cols.push(`admin ${e.event_type}`, `${e.identity_name} [${e.identity_id}]`, `by ${e.os_user}@${e.host}`);
      break;
    default:
      cols.push(String(e.namespace), JSON.stringify(e));
  }
  return cols.filter(Boolean).join('  ');
}

/** What granted a session or circuit (the access log): its policies of each kind and the checks that passed. */
function grantLine(g: Ev | undefined): string {
  if (!g) return '';
  const names = (list: Ev[] | undefined) => (list ?? []).map((x) => x.name || x.id).join(',');
  const parts = [
    `service-policy ${names(g.service_policies) || '-'}`,
    `edge-router-policy ${names(g.edge_router_policies) || '-'}`,
    `service-edge-router-policy ${names(g.service_edge_router_policies) || '-'}`,
    ...(g.posture_checks?.length ? [`posture ${names(g.posture_checks)}`] : []),
  ];
  return `granted by ${parts.join('; ')}`;
}

/** What a refused session lacked. */
function missingLine(list: Ev[] | undefined): string {
  return list?.length ? `missing: ${list.map((m) => m.message).join('; ')}` : '';
}

/** The fields an update changed (their values are in -o json). */
function changedFields(e: Ev): string {
  if (e.eventType !== 'updated' || !e.initialState || !e.finalState) return '';
  const keys = Object.keys(e.finalState).filter((k) => k !== 'updatedAt' && JSON.stringify(e.initialState[k]) !== JSON.stringify(e.finalState[k]));
  return keys.length ? `changed ${keys.join(', ')}` : '';
}

export function eventsCommand(): Command {
  return targetOptions(new Command('events').usage('--follow [--type T] [options]').description('follow the controller\'s events as they happen: entity changes, logins, API sessions, sessions, enrollments, posture failures, failed TLS handshakes, routers, links, circuits, terminators'))
    .option('-f, --follow', 'stay connected and print events as they come (Ctrl-C to stop)')
    .option('-t, --type <types>', 'only these types, repeatable or comma-separated: entityChange, apiSession, session, authentication, enrollment, admin, posture, tls, router, link, circuit, terminator', collect, [])
    .action(async (opts: CommonOpts & { follow?: boolean; type: string[] }) => {
      const format = parseFormat(opts.output);
      if (!opts.follow) throw new CliError('ztc events prints events as they happen: add --follow (the stored history is `ztc audit`)');
      if (opts.dataDir || opts.config) throw new CliError('Following events needs the running controller: log in to it (ztc login URL) and run ztc events --follow without --data-dir');
      await withTransport(opts, async (t) => {
        const query = opts.type.length ? `?types=${encodeURIComponent(opts.type.join(','))}` : '';
        let buf = '';
        let announced = false;
        let stopping = false;
        const reply = await t.download(`${API}/events${query}`, 'text/event-stream', (chunk) => {
          // The controller opens the stream with a comment: from then on no event is missed. Said on
          // stderr, so a script can wait for it before making the change it wants to see.
          if (!announced && chunk.startsWith(': ztc events')) {
            announced = true;
            process.stderr.write(`following events${opts.type.length ? ` (${opts.type.join(', ')})` : ''}: Ctrl-C to stop\n`);
          }
          buf += chunk;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            // The controller's last words when it stops (STOPPING_COMMENT in server/routes/management/events.ts).
            if (block === ': the controller is stopping') stopping = true;
            const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
            if (!data) continue;
            if (format === 'table') {
              try {
                process.stdout.write(eventLine(JSON.parse(data) as Ev) + '\n');
              } catch {
                process.stdout.write(data + '\n');
              }
            } else process.stdout.write(data + '\n');
          }
        });
        expectOk(reply, 'Following events');
        if (reply.status === 200 && stopping) throw new CliError('The controller is stopping: the event stream ended');
        if (reply.status === 200) throw new CliError('The controller ended the event stream (it stopped, or this reader fell too far behind)');
      });
    });
}

export function auditCommand(): Command {
  return targetOptions(new Command('audit').usage('[--entity X] [--since 1d] [options]').description('who changed what, when: the stored events (entity changes, logins, enrollments, admin recovery, posture failures, sessions made and refused) of the retention window, newest first'))
    .option('-e, --entity <id-or-name>', 'only events about this entity, by id or name alike (an identity\'s include its logins and enrollments)')
    .option('--actor <id-or-name>', 'only what this identity did (the sessions it opened, too)')
    .option('-s, --since <when>', 'only events since a duration ago (30m, 12h, 1d, 2w) or an ISO-8601 time')
    .option('-t, --type <types>', 'only these types: entityChange, authentication, enrollment, admin, posture, session', collect, [])
    .option('--limit <n>', 'at most this many events (default 100, at most 1000)')
    .action(async (opts: CommonOpts & { entity?: string; actor?: string; since?: string; type: string[]; limit?: string }) => {
      const format = parseFormat(opts.output);
      const q = new URLSearchParams();
      if (opts.entity) q.set('entity', opts.entity);
      if (opts.actor) q.set('actor', opts.actor);
      if (opts.since) q.set('since', opts.since);
      if (opts.type.length) q.set('types', opts.type.join(','));
      if (opts.limit) q.set('limit', opts.limit);
      await withTransport(opts, async (t) => {
        const body = expectOk(await t.request('GET', `${API}/audit-events?${q}`), 'Reading the audit');
        const events = (body?.data ?? []) as Ev[];
        if (format !== 'table') return print(events, format);
        if (!events.length) {
          // A misspelt name finds nothing too: the audit keeps names as they were, deleted entities' included.
          const about = [opts.entity && `entity '${opts.entity}' (its id, or its name when the event happened: check the spelling)`, opts.actor && `actor '${opts.actor}'`].filter(Boolean).join(' and ');
          return void process.stdout.write(`no events recorded${about ? ` for ${about}` : ' for that'} (the audit keeps the retention window: auditRetentionDays)\n`);
        }
        for (const e of events) process.stdout.write(eventLine(e) + '\n');
      });
    });
}
