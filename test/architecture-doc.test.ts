import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_PORTS, SERVICE_NAMES, type ServiceName } from '../packages/config/src/index.js';
import { fleetGraph, grpcServices } from './support/fleet-graph.js';

/*
 * docs/architecture.md's port, call and event tables and its diagram, held to the code: the ports in @cairn/config,
 * the gRPC clients each service creates and the rpcs it calls on them, the event types it publishes (newEvent) and
 * those its durable consumers take. A failure lists the rows the page lacks and the rows the code no longer backs.
 */

const PAGE = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8');
const graph = fleetGraph();
const grpc = grpcServices();

/**
 * Calls of a service's own methods that share a name with an rpc of a peer it has a client of: the source walk
 * cannot tell them from a call of that rpc. Each names where it is.
 */
const NOT_RPC_CALLS: ReadonlyArray<{ caller: ServiceName; rpc: string; why: string }> = [
  { caller: 'softbinding', rpc: 'SignerService.Sign', why: "app/repository.ts: the receipts port's sign()" },
  { caller: 'verifier', rpc: 'AnchorService.Enqueue', why: 'the outbox and the verify work queue: enqueue()' },
];

/** The rows of the table whose header row starts with `header`, as trimmed cells. */
function table(header: string): string[][] {
  const lines = PAGE.split('\n');
  const start = lines.findIndex((line) => line.startsWith(header));
  if (start < 0) throw new Error(`docs/architecture.md has no table headed "${header}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

/** `signer (sign jobs), verifier (verify jobs)` → signer, verifier; `—` → nothing. */
function serviceList(cell: string): string[] {
  let bare = cell;
  // Parentheses may nest (`(… (`x`) …)`): strip innermost first.
  while (/\([^()]*\)/.test(bare)) bare = bare.replace(/\([^()]*\)/g, '');
  const names = bare
    .replace(/^[^:]*:/, '')
    .split(',')
    .map((part) => part.trim().replace(/`/g, ''))
    .filter((part) => part !== '' && part !== '—');
  return names;
}

function difference(label: string, documented: Iterable<string>, derived: Iterable<string>): string[] {
  const page = new Set(documented);
  const code = new Set(derived);
  return [
    ...[...code].filter((row) => !page.has(row)).map((row) => `${label}: missing from the page: ${row}`),
    ...[...page].filter((row) => !code.has(row)).map((row) => `${label}: on the page, not in the code: ${row}`),
  ].sort();
}

describe('docs/architecture.md against the code', () => {
  it('the ports table is @cairn/config DEFAULT_PORTS', () => {
    const documented = table('| service | gRPC |').map(([service, grpcPort, ops]) => `${service} ${grpcPort} ${ops}`);
    const derived = SERVICE_NAMES.map(
      (service) => `${service} ${DEFAULT_PORTS[service].grpc} ${DEFAULT_PORTS[service].ops}`,
    );
    expect(difference('ports', documented, derived)).toEqual([]);
  });

  it('the call table lists every gRPC client each service creates and the rpcs it calls, and nothing else', () => {
    const documented: string[] = [];
    for (const [caller, service, methods] of table('| caller | gRPC service')) {
      const name = /`(\w+)`/.exec(service ?? '')?.[1] ?? service;
      const owner = /\((\w+)\)/.exec(service ?? '')?.[1];
      if (owner !== grpc.get(name ?? '')?.owner)
        documented.push(`${caller} -> ${name} is served by ${grpc.get(name ?? '')?.owner ?? 'no service'}`);
      for (const method of (methods ?? '').split(',').map((m) => m.trim()))
        documented.push(`${caller} -> ${name}.${method}`);
    }
    const ignored = new Set(NOT_RPC_CALLS.map(({ caller, rpc }) => `${caller} -> ${rpc}`));
    const derived: string[] = [];
    for (const [caller, service] of graph)
      for (const [client, methods] of service.methods)
        for (const method of methods.size > 0 ? methods : ['(none found)'])
          if (!ignored.has(`${caller} -> ${client}.${method}`)) derived.push(`${caller} -> ${client}.${method}`);
    expect(difference('calls', documented, derived)).toEqual([]);
  });

  it('each NOT_RPC_CALLS entry is still a name the walk finds (else it hides nothing and goes)', () => {
    for (const { caller, rpc } of NOT_RPC_CALLS) {
      const [client = '', method = ''] = rpc.split('.');
      expect({ caller, rpc, found: graph.get(caller)?.methods.get(client)?.has(method) ?? false }).toEqual({
        caller,
        rpc,
        found: true,
      });
    }
  });

  it('the event table names every publisher and every durable consumer of each event type, and nothing else', () => {
    const published: string[] = [];
    const consumed: string[] = [];
    for (const [eventCell = '', publishers = '', consumers = ''] of table('| event | published by |')) {
      const types = /`all`/.test(eventCell)
        ? ['all']
        : [...eventCell.matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map((match) => match[1] ?? '');
      for (const type of types) {
        for (const service of serviceList(publishers)) published.push(`${type} published by ${service}`);
        for (const service of serviceList(consumers)) consumed.push(`${type} consumed by ${service}`);
      }
    }
    const derivedPublished: string[] = [];
    const derivedConsumed: string[] = [];
    for (const [service, { publishes, consumes }] of graph) {
      for (const type of publishes) derivedPublished.push(`${type} published by ${service}`);
      for (const type of consumes) derivedConsumed.push(`${type} consumed by ${service}`);
    }
    expect([
      ...difference('events', published, derivedPublished),
      ...difference('events', consumed, derivedConsumed),
    ]).toEqual([]);
  });

  it('the diagram draws the same calls, publishers and consumers', () => {
    const diagram = /```mermaid\n([\s\S]*?)```/.exec(PAGE)?.[1] ?? '';
    const services = new Set<string>(SERVICE_NAMES);
    const edges = [...diagram.matchAll(/^\s*(\w+) -->\|(\w+)\| (\w+)$/gm)]
      .filter(([, from = '', , to = '']) => services.has(from) && services.has(to))
      .map(([, from, label, to]) => `${from} -> ${label} (${to})`);
    const side = (pattern: RegExp): string[] =>
      (pattern.exec(diagram)?.[1] ?? '').split('&').map((name) => name.trim());
    const publishers = side(/^\s*(.+?) -\.publish\.-> bus$/m);
    const consumers = side(/^\s*bus -\.consume\.-> (.+)$/m);

    const derivedEdges: string[] = [];
    for (const [caller, service] of graph)
      for (const client of service.clients) derivedEdges.push(`${caller} -> ${client} (${grpc.get(client)?.owner})`);
    const derivedPublishers = [...graph].filter(([, s]) => s.publishes.size > 0).map(([name]) => name);
    const derivedConsumers = [...graph].filter(([, s]) => s.consumes.size > 0).map(([name]) => name);
    expect([
      ...difference('diagram calls', edges, derivedEdges),
      ...difference('diagram publishers', publishers, derivedPublishers),
      ...difference('diagram consumers', consumers, derivedConsumers),
    ]).toEqual([]);
  });
});
