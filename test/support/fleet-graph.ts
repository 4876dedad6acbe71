import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { SERVICE_NAMES, type ServiceName } from '../../packages/config/src/index.js';

/**
 * Who calls whom over gRPC and who publishes and consumes which event, read from the services' source (a syntax
 * walk, no type checking, so it is quick), so the architecture page's tables can be held to the code.
 */

const ROOT = join(import.meta.dirname, '..', '..');

/** A gRPC service of the fleet: its name in the proto, the fleet service that serves it and its rpc names. */
export interface GrpcService {
  readonly name: string;
  readonly owner: ServiceName;
  readonly methods: readonly string[];
}

/** Every `service X { rpc … }` of proto/cairn/<owner>/v1. */
export function grpcServices(): Map<string, GrpcService> {
  const services = new Map<string, GrpcService>();
  for (const owner of SERVICE_NAMES) {
    const dir = join(ROOT, 'proto', 'cairn', owner, 'v1');
    // The gateway serves HTTP only: it has no proto of its own.
    if (!existsSync(dir)) continue;
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.proto'))) {
      const text = readFileSync(join(dir, file), 'utf8');
      for (const match of text.matchAll(/^service\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
        const name = match[1] ?? '';
        const methods = [...(match[2] ?? '').matchAll(/^\s*rpc\s+(\w+)\s*\(/gm)].map((rpc) => rpc[1] ?? '');
        services.set(name, { name, owner, methods });
      }
    }
  }
  return services;
}

function sourceFiles(dir: string): ts.SourceFile[] {
  const files: ts.SourceFile[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
      files.push(ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true));
  }
  return files;
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  ts.forEachChild(node, (child) => visit(child, each));
}

function calleeName(call: ts.CallExpression): string | undefined {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  return undefined;
}

/** `signerV1.SignerService` or `SignerService`: the last name. */
function lastName(node: ts.Expression | undefined): string | undefined {
  if (!node) return undefined;
  if (ts.isIdentifier(node)) return node.text;
  if (ts.isPropertyAccessExpression(node)) return node.name.text;
  return undefined;
}

function unwrap(node: ts.Expression): ts.Expression {
  let current = node;
  while (ts.isAsExpression(current) || ts.isParenthesizedExpression(current) || ts.isSatisfiesExpression(current))
    current = current.expression;
  return current;
}

function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

/** What one service does on the wire, as its source says. */
export interface ServiceGraph {
  /** gRPC services it makes a client of. */
  readonly clients: ReadonlySet<string>;
  /** Per client's gRPC service: the rpcs called as `.<method>(` anywhere in the service's source. */
  readonly methods: ReadonlyMap<string, ReadonlySet<string>>;
  readonly publishes: ReadonlySet<string>;
  /** Event types of its durable consumers; 'all' for a consumer of every event. */
  readonly consumes: ReadonlySet<string>;
}

/**
 * Reads services/<service>/src. A client is a call given another service's gRPC service as an argument
 * (`ctx.client(signerV1.SignerService, 'signer')`, createClient, or a helper around them), whatever the callee is
 * named. A publish is `newEvent('<type>', …)`. A
 * consumer is `<x>.consume(durable, types, handler)` whose types are `'all'`, an array of event types, or a
 * constant of the service holding one.
 */
export function serviceGraph(service: ServiceName, grpc: Map<string, GrpcService>): ServiceGraph {
  const files = sourceFiles(join(ROOT, 'services', service, 'src'));
  const constants = new Map<string, ts.Expression>();
  for (const file of files)
    visit(file, (node) => {
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer)
        constants.set(node.name.text, unwrap(node.initializer));
    });
  const eventTypes = (node: ts.Expression | undefined, seen = 0): string[] => {
    if (!node || seen > 3) return [];
    const value = unwrap(node);
    if (ts.isStringLiteralLike(value)) return [value.text];
    if (ts.isArrayLiteralExpression(value)) return value.elements.flatMap((element) => eventTypes(element, seen + 1));
    if (ts.isIdentifier(value)) return eventTypes(constants.get(value.text), seen + 1);
    return [];
  };

  const clients = new Set<string>();
  const publishes = new Set<string>();
  const consumes = new Set<string>();
  const calledNames = new Set<string>();
  for (const file of files)
    visit(file, (node) => {
      if (!ts.isCallExpression(node)) return;
      const name = calleeName(node);
      if (!name) return;
      if (ts.isPropertyAccessExpression(node.expression)) calledNames.add(name);
      // Any call handed another service's gRPC service (ctx.client, createClient or a helper around them) makes a
      // client of it; a service's own gRPC service is only ever registered (ctx.rpc.add).
      for (const argument of node.arguments) {
        const grpcName = lastName(argument);
        if (grpcName && grpc.get(grpcName) && grpc.get(grpcName)?.owner !== service) clients.add(grpcName);
      }
      if (name === 'newEvent') {
        const [type] = node.arguments;
        if (type && ts.isStringLiteralLike(type)) publishes.add(type.text);
      } else if (name === 'consume' && ts.isPropertyAccessExpression(node.expression) && node.arguments.length === 3) {
        for (const type of eventTypes(node.arguments[1])) consumes.add(type);
      }
    });
  const methods = new Map<string, Set<string>>();
  for (const client of clients) {
    const rpcs = grpc.get(client)?.methods ?? [];
    methods.set(client, new Set(rpcs.filter((rpc) => calledNames.has(lowerFirst(rpc)))));
  }
  return { clients, methods, publishes, consumes };
}

export function fleetGraph(): Map<ServiceName, ServiceGraph> {
  const grpc = grpcServices();
  return new Map(SERVICE_NAMES.map((service) => [service, serviceGraph(service, grpc)]));
}
