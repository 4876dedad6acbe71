/**
 * Real helm for the chart tests: the pinned binary tools/dev/helm.mjs installs into .cairn/bin (npm test runs it
 * first; installHelm runs it again, a no-op when the binary is there). `helm template` runs without a cluster, so
 * `lookup` answers nothing, as under Argo CD, `--dry-run` or `helm template | kubectl apply`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from './kubernetes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const HELM = join(ROOT, '.cairn', 'bin', 'helm');
export const CHART = join(ROOT, 'charts', 'cairn');

export function installHelm(): string {
  execFileSync(process.execPath, [join(ROOT, 'tools', 'dev', 'helm.mjs')], { stdio: 'pipe', timeout: 600_000 });
  return execFileSync(HELM, ['version', '--short'], { encoding: 'utf8' }).trim();
}

export interface HelmRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function helm(args: string[]): HelmRun {
  const run = spawnSync(HELM, args, { encoding: 'utf8', timeout: 60_000, cwd: ROOT, env: { ...process.env } });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** `helm template <release> charts/cairn -n <namespace> ...args`, without failing on a refused render. */
export function template(args: string[], release = 'cairn', namespace = 'cairn'): HelmRun {
  return helm(['template', release, CHART, '--namespace', namespace, ...args]);
}

/** The objects of a render that must succeed. */
export function render(args: string[], release = 'cairn', namespace = 'cairn'): KubeObject[] {
  const run = template(args, release, namespace);
  if (run.status !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${run.stderr}`);
  return parseAllDocuments(run.stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
      return doc.toJS() as KubeObject | null;
    })
    .filter((o): o is KubeObject => o !== null);
}
