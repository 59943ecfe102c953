// The router data model kept by patches (issue 46 item 4): after a change made through the API, the
// last reading patched with what the recorded changes name (model/router-data-model.ts
// readRouterDataModelPart, fabric/rdm/snapshot.ts patchSnapshot) must equal a whole reading of the store,
// and the change set routers are sent must be the one the two whole readings differ by. Each change
// below is checked so: identities moved between policies, created, deleted, disabled; policies created,
// re-targeted, given a posture check, deleted; a service renamed.
import { describe, expect, it } from 'vitest';
import { encode } from '../../src/fabric/channel/protobuf.js';
import { publicKeys } from '../../src/fabric/rdm/public-keys.js';
import { RdmSchemas } from '../../src/fabric/rdm/schemas.js';
import { changes, fullState, patchSnapshot, wholeSnapshot, type Snapshot } from '../../src/fabric/rdm/snapshot.js';
import { readRouterDataModelPart, readRouterDataModelWhole, routerModelChanges } from '../../src/model/router-data-model.js';
import { controllerForFile } from '../helpers/controller.js';

const f = controllerForFile();

async function whole(): Promise<Snapshot> {
  const w = await readRouterDataModelWhole(f.c.opened.ctx);
  return wholeSnapshot(w, publicKeys(f.c.opened.ctx.pki, w.source));
}

/** A reading as comparable data: each kind's entities (id -> encoded event) and each policy side's members, sorted. */
function contents(s: Snapshot) {
  const kinds = Object.fromEntries([...s.entries].map(([kind, m]) => [kind, Object.fromEntries([...m].map(([id, e]) => [id, e.bytes.toString('hex')]).sort())]));
  const members = Object.fromEntries([...s.members].filter(([, ids]) => ids.size).map(([k, ids]) => [k, [...ids].sort()]).sort());
  return { kinds, members, policies: s.policies };
}

/** A change set's events, encoded and sorted: the same changes whatever their order within a kind. */
const eventSet = (events: Record<string, unknown>[]) => events.map((e) => encode(RdmSchemas.Event, e).toString('hex')).sort();

const seen = new Set<string>();
/** The identities and policies the changes recorded since the last look name, as the sender reads them. */
async function recorded() {
  const identities: string[] = [];
  const policies: string[] = [];
  for (const r of await routerModelChanges(f.c.opened.ctx, '')) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    if (r.entityType === 'identities' && r.entityId) identities.push(r.entityId);
    if (r.entityType === 'servicePolicies' && r.entityId) policies.push(r.entityId);
  }
  return { identities, policies };
}

/** Make a change; the patched reading must equal a whole one, its change set the whole readings' difference. */
async function check(change: () => Promise<unknown>) {
  await recorded();
  const before = await whole();
  const beforeAgain = await whole();
  await change();
  const part = await readRouterDataModelPart(f.c.opened.ctx, await recorded());
  const patched = patchSnapshot(before, part, publicKeys(f.c.opened.ctx.pki, part.source));
  expect(patched).toBeDefined();
  const after = await whole();
  expect(contents(patched!.next)).toEqual(contents(after));
  const sent = changes(beforeAgain, patched!.next, patched!.touched);
  expect(sent.length).toBeGreaterThan(0);
  expect(eventSet(sent)).toEqual(eventSet(changes(beforeAgain, after)));
  // The full state built from the patched reading carries the same events as the whole reading's.
  expect(fullState(patched!.next, 1n, 't').length).toBe(fullState(after, 1n, 't').length);
  return sent;
}

describe('the router data model patched after recorded changes, against a whole reading', () => {
  const ids: Record<string, string> = {};

  it('a model to patch: services, identities, dial and bind policies', async () => {
    ids.web = await f.created('/services', { name: 'rp-web', encryptionRequired: true, roleAttributes: ['web'] });
    ids.db = await f.created('/services', { name: 'rp-db', encryptionRequired: false, roleAttributes: ['db'] });
    for (const [name, roles] of [['u1', ['staff']], ['u2', ['staff', 'dev']], ['u3', ['dev']]] as const) ids[name] = await f.created('/identities', { name: `rp-${name}`, type: 'Device', isAdmin: false, roleAttributes: roles });
    ids.dial = await f.created('/service-policies', { name: 'rp-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'] });
    ids.bind = await f.created('/service-policies', { name: 'rp-bind', type: 'Bind', semantic: 'AnyOf', identityRoles: ['#dev'], serviceRoles: ['#db'] });
    const s = await whole();
    expect([...s.members.get(`${ids.dial}|2`)!].sort()).toEqual([ids.u1, ids.u2].sort());
  });

  it("an identity's role attributes changed: it leaves one policy and joins another", async () => {
    const sent = await check(() => f.mgmt('PATCH', `/identities/${ids.u1}`, { roleAttributes: ['dev'] }));
    expect(sent.map((e) => (e.servicePolicyChange as { policyId: string } | undefined)?.policyId).filter(Boolean).sort()).toEqual([ids.dial, ids.bind].sort());
  });

  it('an identity created into a policy, and one renamed', async () => {
    await check(async () => {
      ids.u4 = await f.created('/identities', { name: 'rp-u4', type: 'Device', isAdmin: false, roleAttributes: ['staff'] });
      await f.mgmt('PATCH', `/identities/${ids.u3}`, { name: 'rp-u3-renamed' });
    });
  });

  it('an identity deleted (out of its policies too), one disabled', async () => {
    await check(async () => {
      expect((await f.mgmt('DELETE', `/identities/${ids.u2}`)).status).toBe(200);
      expect((await f.mgmt('POST', `/identities/${ids.u3}/disable`, { durationMinutes: 0 })).status).toBe(200);
    });
  });

  it('a policy created with members, and one re-targeted', async () => {
    await check(async () => {
      ids.more = await f.created('/service-policies', { name: 'rp-more', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#dev'], serviceRoles: ['#web', '#db'] });
      await f.mgmt('PATCH', `/service-policies/${ids.bind}`, { identityRoles: ['#staff'] });
    });
  });

  it('a posture check given to a policy, a service renamed', async () => {
    await check(async () => {
      await f.created('/posture-checks', { name: 'rp-mac', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'], roleAttributes: ['rp'] });
      await f.mgmt('PATCH', `/service-policies/${ids.dial}`, { postureCheckRoles: ['#rp'] });
      await f.mgmt('PATCH', `/services/${ids.web}`, { name: 'rp-web-2' });
    });
  });

  it('a policy deleted', async () => {
    await check(() => f.mgmt('DELETE', `/service-policies/${ids.more}`));
  });

  it('a router becomes a tunneler (its identity goes by the router id): no patch, the whole model is read', async () => {
    await recorded();
    const before = await whole();
    await f.created('/edge-routers', { name: 'rp-er', roleAttributes: [], isTunnelerEnabled: true });
    const part = await readRouterDataModelPart(f.c.opened.ctx, await recorded());
    expect(patchSnapshot(before, part, [])).toBeUndefined();
  });
});
