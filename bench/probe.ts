// One client's service-list latency from a process of its own, so what it measures is the controller and
// not a load generator sharing its event loop: node dist/bench/probe.js URL TOKEN SECONDS -> {"p50","p99"}.
// SECONDS 0: until its stdin ends (the bench closes it when what it measures beside is over).
// EVERY_MS (a fifth argument): one call every EVERY_MS on a fixed schedule, each timed from when it was
// due (a call held up delays the next, and that wait counts), rather than one after another as fast as
// the controller answers (which loads the controller itself: its API thread busy beside what is measured).
import https from 'node:https';

const [url, token, seconds, everyMs] = process.argv.slice(2);
const every = Number(everyMs) || 0;
const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
const times: number[] = [];
let end = Number(seconds) > 0 ? Date.now() + Number(seconds) * 1000 : Infinity;
if (!(Number(seconds) > 0)) {
  process.stdin.resume();
  process.stdin.on('end', () => (end = 0));
}
const start = performance.now();
for (let i = 0; Date.now() < end; i++) {
  let t = performance.now();
  if (every) {
    const due = start + i * every;
    if (t < due) await new Promise((r) => setTimeout(r, due - t));
    t = due;
  }
  await new Promise<void>((resolve, reject) => {
    https
      .get(`${url}/edge/client/v1/services?limit=25`, { agent, headers: { 'zt-session': token } }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      })
      .on('error', reject);
  });
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
const at = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))];
process.stdout.write(JSON.stringify({ n: times.length, p50: at(50), p99: at(99) }) + '\n');
agent.destroy();
process.stdin.destroy();
