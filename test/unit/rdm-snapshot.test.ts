/* eslint-disable @typescript-eslint/no-explicit-any */
// The router data model's readings and what goes to routers from them (src/fabric/rdm/snapshot.ts): the
// full state in upstream's order, and the change set between two readings (creates and updates, members
// removed then added, deletes last, policies before what they name), through the wire encoding.
import { describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { RdmSchemas } from '../../src/fabric/rdm/schemas.js';
import { buildSnapshot, changes, fullEvents, fullState } from '../../src/fabric/rdm/snapshot.js';
import type { RouterDataModelSource } from '../../src/model/router-data-model.js';

const identity = (id: string, name = id) => ({ id, name, defaultHostingPrecedence: 0, defaultHostingCost: 0, serviceHostingPrecedences: {}, serviceHostingCosts: {}, appDataJson: '{}', serviceConfigs: {}, disabled: false });
const source = (o: Partial<RouterDataModelSource> = {}): RouterDataModelSource => ({
  configTypes: [],
  configs: [],
  identities: [identity('i1'), identity('i2')],
  services: [{ id: 's1', name: 'echo', encryptionRequired: true, configs: [] }],
  servicePolicies: [{ id: 'p1', name: 'dial', policyType: 1, services: ['s1'], identities: ['i1'], postureChecks: [] }],
  postureChecks: [],
  caPems: [],
  controllerPems: [],
  ...o,
});
const key = { data: Buffer.from('der'), kid: 'k1', usages: [0, 1], format: 0 };
/** Through the codec, as a router reads them. */
const wire = (events: Record<string, unknown>[]) => decode(RdmSchemas.ChangeSet, encode(RdmSchemas.ChangeSet, { index: 2n, changes: events })).changes as Record<string, any>[];
const kindOf = (e: Record<string, any>) => Object.keys(e).find((k) => k !== 'action' && k !== 'isSynthetic')!;

describe('router data model snapshots', () => {
  it('the full state: identities and services, then each policy followed by its members, then the keys', () => {
    const events = wire(fullEvents(buildSnapshot(source(), [key])));
    expect(events.map(kindOf)).toEqual(['identity', 'identity', 'service', 'servicePolicy', 'servicePolicyChange', 'servicePolicyChange', 'publicKey']);
    expect(events[4].servicePolicyChange).toMatchObject({ policyId: 'p1', relatedEntityIds: ['s1'], relatedEntityType: 1, add: true });
    expect(events[5].servicePolicyChange).toMatchObject({ relatedEntityIds: ['i1'], relatedEntityType: 2 });
    expect(events[6]).toMatchObject({ isSynthetic: true, publicKey: { kid: 'k1', usages: [0, 1] } });
  });

  it('nothing changed: no change set', () => {
    expect(changes(buildSnapshot(source(), [key]), buildSnapshot(source(), [key]))).toEqual([]);
  });

  it('a change set: an update, a member moved, an identity and a key gone, in an order a router can apply', () => {
    const before = buildSnapshot(source(), [key]);
    const after = buildSnapshot(source({ identities: [identity('i1', 'renamed')], servicePolicies: [{ id: 'p1', name: 'dial', policyType: 1, services: ['s1'], identities: [], postureChecks: [] }] }), []);
    // i2 left, i1 renamed and out of the policy.
    const events = wire(changes(before, after));
    expect(events.map((e) => [kindOf(e), e.action ?? 0])).toEqual([
      ['identity', 1],
      ['servicePolicyChange', 0],
      ['identity', 2],
      ['publicKey', 2],
    ]);
    expect(events[0].identity).toMatchObject({ id: 'i1', name: 'renamed' });
    expect(events[1].servicePolicyChange).toMatchObject({ policyId: 'p1', relatedEntityIds: ['i1'], relatedEntityType: 2 });
    expect(events[1].servicePolicyChange.add ?? false).toBe(false);
    expect(events[2].identity.id).toBe('i2');
  });

  it('a new policy with members: created before its members are added; a deleted policy goes after its members are dropped', () => {
    const before = buildSnapshot(source(), []);
    const withBind = buildSnapshot(source({ servicePolicies: [...source().servicePolicies, { id: 'p2', name: 'bind', policyType: 2, services: ['s1'], identities: ['i2'], postureChecks: [] }] }), []);
    const added = wire(changes(before, withBind));
    expect(added.map(kindOf)).toEqual(['servicePolicy', 'servicePolicyChange', 'servicePolicyChange']);
    expect(added[0]).toMatchObject({ servicePolicy: { id: 'p2', policyType: 2 } });
    const removed = wire(changes(withBind, before));
    expect(removed.map((e) => [kindOf(e), e.action ?? 0])).toEqual([['servicePolicy', 2]]);
  });

  it('revocations: after the keys in the full state, as DataState.Revocation with Timestamps (issuedBefore only for IDENTITY); created, and deleted once past their expiry', () => {
    const revocations = [
      { id: 'asid1', type: 'API_SESSION', expiresAt: '2026-11-28T05:00:00.250Z' },
      { id: 'i1', type: 'IDENTITY', expiresAt: '2026-11-29T04:00:00.000Z', issuedBefore: '2026-11-28T04:00:01.500Z' },
    ];
    const events = wire(fullEvents(buildSnapshot(source({ revocations }), [key])));
    expect(events.map(kindOf).slice(-3)).toEqual(['publicKey', 'revocation', 'revocation']);
    const [a, i] = events.slice(-2);
    // Not synthetic: they carry the index, as upstream's do.
    expect(a.isSynthetic ?? false).toBe(false);
    expect(a.revocation).toEqual({ id: 'asid1', type: 'API_SESSION', expiresAt: { seconds: BigInt(Date.parse('2026-11-28T05:00:00Z') / 1000), nanos: 250_000_000 } });
    expect(i.revocation).toMatchObject({ id: 'i1', type: 'IDENTITY', issuedBefore: { seconds: BigInt(Date.parse('2026-11-28T04:00:01Z') / 1000), nanos: 500_000_000 } });
    // A new one is a create; one gone from the reading (pruned past its expiry) a delete.
    const before = buildSnapshot(source({ revocations: revocations.slice(0, 1) }), []);
    const after = buildSnapshot(source({ revocations: revocations.slice(1) }), []);
    expect(wire(changes(before, after)).map((e) => [kindOf(e), e.action ?? 0, e.revocation.id])).toEqual([
      ['revocation', 0, 'i1'],
      ['revocation', 2, 'asid1'],
    ]);
  });

  it('an OS check without versions is given the range of every version (a 2.0.3 router fails an OS with an empty list); versions given go as they are', () => {
    const postureChecks = [{ id: 'c1', name: 'os', typeId: 'OS', data: { operatingSystems: [{ type: 'Linux' }, { type: 'Windows', versions: ['>=10.0.19041'] }] } }];
    const events = wire(fullEvents(buildSnapshot(source({ postureChecks }), [])));
    expect(events.find((e) => e.postureCheck)!.postureCheck.osList.osList).toEqual([
      { osType: 'Linux', osVersions: ['>=0.0.0'] },
      { osType: 'Windows', osVersions: ['>=10.0.19041'] },
    ]);
  });

  it('the full state is built from each entity\'s bytes kept encoded: the same bytes as its events encoded together', () => {
    const postureChecks = [{ id: 'c1', name: 'mac', typeId: 'MAC', data: { macAddresses: ['00:11:22:33:44:55'] } }];
    const s = buildSnapshot(source({ postureChecks, revocations: [{ id: 'asid1', type: 'API_SESSION', expiresAt: '2026-11-28T05:00:00.250Z' }] }), [key]);
    expect(fullState(s, 7n, 'timeline')).toEqual(encode(RdmSchemas.DataState, { events: fullEvents(s), endIndex: 7n, timelineId: 'timeline' }));
  });
});
