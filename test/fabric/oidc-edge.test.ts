// A JWT API session on the data plane: an SDK that logged in through /oidc (C SDK style: cert login,
// refresh_token grant) says hello to ztc's edge router with its access token, binds and dials with
// service sessions made with that token, hands the router its refreshed token (UpdateToken), and loses
// its channel when the session ends (logout).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { claimsOf, oidcClient } from '../helpers/oidc.js';
import { CT, EdgePeer, H, le32, one, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
let host: Member;
let client: Member;
let echo: string;
let oidc: ReturnType<typeof oidcClient>;
beforeAll(async () => {
  n = await startNetwork();
  oidc = oidcClient(n.c);
  echo = await n.service('echo');
  host = await n.identity('oidc-host', ['echo-hosts']);
  client = await n.identity('oidc-client', ['echo-clients']);
}, 60_000);
afterAll(() => n.close());

const text = (f: Frame) => f.body.toString('utf8');
const u32 = (f: Frame, h: number) => f.headers.get(h)!.readUInt32LE(0);

/** Log in through /oidc with the member's certificate; a channel whose hello carries the access token. */
async function jwtPeer(who: Member) {
  const { tokens } = await oidc.cCert({ cert: who.cert, key: who.key });
  const p = await EdgePeer.connect(n.routerPort, { cert: who.cert, key: who.key });
  const r = await p.hello(tokens.access_token);
  expect(r.type).toBe(CT.Result);
  expect(r.headers.get(H.ResultSuccess)).toEqual(one);
  return { p, tokens };
}

async function session(access: string, type: 'Dial' | 'Bind') {
  const r = await n.c.call('POST', `${CLIENT}/sessions`, { bearer: access, body: { serviceId: echo, type } });
  expect(r.status, r.text).toBe(201);
  return r.body.data.token as string;
}

describe('a JWT API session on the edge router', () => {
  it('says hello with its access token, binds, dials and relays', async () => {
    const h = await jwtPeer(host);
    const bindToken = await session(h.tokens.access_token, 'Bind');
    const bind = h.p.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 7)]], Buffer.from(bindToken));
    expect((await h.p.replyTo(bind)).type).toBe(CT.StateConnected);

    const d = await jwtPeer(client);
    const dialToken = await session(d.tokens.access_token, 'Dial');
    const connect = d.p.send(CT.Connect, [[H.ConnId, le32(5)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 9)]], Buffer.from(dialToken));
    const dial = await h.p.next((f) => f.type === CT.Dial);
    const ok = h.p.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], le32(77));
    expect((await h.p.replyTo(ok)).type).toBe(CT.StateConnected);
    expect((await d.p.replyTo(connect)).type).toBe(CT.StateConnected);
    d.p.send(CT.Data, [[H.ConnId, le32(5)], [H.Seq, le32(1)]], Buffer.from('ping'));
    const atHost = await h.p.next((f) => f.type === CT.Data);
    expect(u32(atHost, H.ConnId)).toBe(77);
    expect(text(atHost)).toBe('ping');

    // The refreshed token is handed to the router: accepted for the same API session.
    const refreshed = await oidc.cRefresh(d.tokens.refresh_token!, { cert: client.cert, key: client.key });
    expect(refreshed.status, refreshed.text).toBe(200);
    const upd = d.p.send(60803, [], Buffer.from(refreshed.body.access_token));
    expect((await d.p.replyTo(upd)).type).toBe(60801);
    // Another session's token is refused, and the channel closed, as upstream's router does.
    const other = d.p.send(60803, [], Buffer.from(h.tokens.access_token));
    expect((await d.p.replyTo(other)).type).toBe(60802);
    await d.p.whenClosed(3000);
    h.p.close();
  });

  it('refuses a hello with a token of another key, an expired or a revoked one', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const [h, p] = tokens.access_token.split('.');
    for (const bad of [`${h}.${p}.${Buffer.alloc(64, 1).toString('base64url')}`]) {
      const peer = await EdgePeer.connect(n.routerPort, { cert: client.cert, key: client.key });
      peer.send(CT.Hello, [[H.SessionToken, Buffer.from(bad)]], Buffer.from('x'), 0);
      await peer.whenClosed(3000);
    }
    expect((await n.api('POST', '/revocations', { id: claimsOf(tokens.access_token).z_asid, type: 'API_SESSION' })).status).toBe(201);
    const peer = await EdgePeer.connect(n.routerPort, { cert: client.cert, key: client.key });
    peer.send(CT.Hello, [[H.SessionToken, Buffer.from(tokens.access_token)]], Buffer.from('x'), 0);
    await peer.whenClosed(3000);
  });

  it('loses its channel when the JWT API session ends (logout)', async () => {
    const d = await jwtPeer(client);
    expect((await n.c.call('DELETE', `${CLIENT}/current-api-session`, { bearer: d.tokens.access_token })).status).toBe(200);
    await d.p.whenClosed(5000);
  });
});
