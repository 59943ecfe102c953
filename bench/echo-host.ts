// An echo host for the relay bench in a process of its own (the SDK side of a Bind, router-assigned ids),
// so the load generator's dialers do not share its CPU: node dist/bench/echo-host.js PORT CERT KEY TOKEN BINDTOKEN
import fs from 'node:fs';
import { CT, EdgePeer, H, le32, type Frame } from '../test/peers/edge-sdk.js';

const [port, certFile, keyFile, token, bindToken] = process.argv.slice(2);
const p = await EdgePeer.connect(Number(port), { cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8') });
await p.hello(token, 0, { current: true });
p.onFrame = (f: Frame) => {
  if (f.type === CT.Dial) {
    p.send(CT.DialSuccess, [[H.ConnId, f.headers.get(H.ConnId)!], [H.ReplyFor, Buffer.from(new Int32Array([f.seq]).buffer)]], f.headers.get(H.RouterProvidedConnId)!);
    return true;
  }
  if (f.type === CT.Data) {
    if (f.body.length) p.send(CT.Data, [[H.ConnId, f.headers.get(H.ConnId)!], [H.Seq, le32(0)]], f.body);
    return true;
  }
  return f.type === CT.StateClosed;
};
const seq = p.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, Buffer.from([1])]], Buffer.from(bindToken));
const r = await p.replyTo(seq);
if (r.type !== CT.StateConnected) {
  process.stderr.write(`bench: bind refused: ${r.body}\n`);
  process.exit(1);
}
process.stdout.write('ready\n');
process.on('SIGTERM', () => process.exit(0));
