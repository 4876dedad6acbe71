// The replica-kill run (test/replica-kill.test.ts) as a benchmark: the fleet as `npm run up -- --replicas N` plans it
// (built bundles, each replica a process of its own, isolated database, NATS stream, Redis prefix and chain), sign,
// verify, lookup and webhook traffic over every gateway replica while one replica of each service in turn is SIGKILLed
// and started again. Prints the requests, the retries and what they cured, each invariant's figures and each replica's
// share. The same run, with its invariants asserted, is test/replica-kill.test.ts. Build the bundles first
// (node tools/dev/build.mjs; npm run up and npm test do).
//
//   pnpm bench:replica-kill [--replicas 2] [--min-signs 16] [--down-ms 1500]
import { parseArgs } from 'node:util';
import { ReplicaFleet } from '../../test/support/replica-fleet.js';
import { describeFigures, REPLICA_KILL_ENV, runReplicaKill } from '../../test/support/replica-kill.js';

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '2' },
    'min-signs': { type: 'string', default: '16' },
    'down-ms': { type: 'string', default: '1500' },
  },
});

const started = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
const fleet = await ReplicaFleet.start(Number(values.replicas), REPLICA_KILL_ENV);
log(`${fleet.plan.services.length} processes ready; gateways ${fleet.gateways.join(', ')}`);
try {
  const figures = await runReplicaKill(fleet, {
    minSigns: Number(values['min-signs']),
    downMs: Number(values['down-ms']),
    log,
  });
  log('done');
  console.log(`\nreplica-kill (${values.replicas} replicas of every service)\n`);
  console.log(describeFigures(figures));
  const lost = figures.signs.filter((s) => s.assetIds.size !== 1).length;
  if (figures.uncured.length) console.log(`\nuncured: ${JSON.stringify(figures.uncured)}`);
  if (lost) console.log(`\nsigns without exactly one asset: ${lost}`);
} finally {
  await fleet.stop();
}
process.exit(0);
