// One client's service-list latency from a process of its own, so what it measures is the controller and
// not a load generator sharing its event loop: node dist/bench/probe.js URL TOKEN SECONDS -> {"p50","p99"}.
import https from 'node:https';

const [url, token, seconds] = process.argv.slice(2);
const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
const times: number[] = [];
const end = Date.now() + Number(seconds) * 1000;
while (Date.now() < end) {
  const t = performance.now();
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
