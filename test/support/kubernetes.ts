/**
 * Static validation of Kubernetes objects against the API's own schemas (no API server can run on these machines):
 *   - kubernetes-models (the OpenAPI schemas of each kind, compiled with ajv): types, required fields and enums;
 *   - @kubernetes/client-node's generated models, which list every field of every type: any field name they do not
 *     list, at any depth, is an error (kubernetes-models lets unknown fields through, as the API server's
 *     non-strict decoding would, silently dropping a misspelt `sizeLimt` or a field of a newer API).
 * Only the client's models file is imported: the package root needs Node 22.
 */
import * as clientModels from '@kubernetes/client-node/dist/gen/models/all.js';
import * as appsV1 from 'kubernetes-models/apps/v1';
import * as networkingV1 from 'kubernetes-models/networking.k8s.io/v1';
import * as policyV1 from 'kubernetes-models/policy/v1';
import * as coreV1 from 'kubernetes-models/v1';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: unknown) => Validatable;

/** The kinds the chart may render, by apiVersion. A kind not listed here is itself an error. */
const KINDS: Record<string, Record<string, unknown>> = {
  v1: coreV1,
  'apps/v1': appsV1,
  'networking.k8s.io/v1': networkingV1,
  'policy/v1': policyV1,
};

interface Attribute {
  baseName: string;
  type: string;
}
type ClientModel = { getAttributeTypeMap(): Attribute[] };
const CLIENT_MODELS = clientModels as unknown as Record<string, ClientModel | undefined>;

/** Types whose values are leaves here (kubernetes-models checks their type). */
const LEAVES = new Set(['string', 'number', 'boolean', 'Date', 'IntOrString', 'V1MicroTime', 'any']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Field names `value` holds that `type` does not define, as paths (a.b[0].c). */
export function unknownFields(value: unknown, type: string, path: string): string[] {
  if (value === null || value === undefined || LEAVES.has(type)) return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return [`${path}: expected a list`];
    return value.flatMap((item, i) => unknownFields(item, array[1]!, `${path}[${i}]`));
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (!isPlainObject(value)) return [`${path}: expected a mapping`];
    return Object.entries(value).flatMap(([key, item]) => unknownFields(item, map[1]!, `${path}.${key}`));
  }
  const model = CLIENT_MODELS[type];
  if (!model?.getAttributeTypeMap) throw new Error(`${path}: no model of type ${type}`);
  if (!isPlainObject(value)) return [`${path}: expected an object (${type})`];
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  return Object.entries(value).flatMap(([key, item]) => {
    const fieldType = attributes.get(key);
    if (fieldType === undefined) return [`${path}.${key}: unknown field of ${type}`];
    return unknownFields(item, fieldType, `${path}.${key}`);
  });
}

/** Every problem of one object: its kind unknown, a schema violation, an unknown field. Empty when valid. */
export function validateObject(object: KubeObject): string[] {
  const where = `${object.kind ?? '?'}/${object.metadata?.name ?? '?'}`;
  const group = KINDS[object.apiVersion];
  const Model = group?.[object.kind] as ModelClass | undefined;
  if (!Model) return [`${where}: ${object.apiVersion} ${object.kind} is not a kind this chart may render`];
  const problems: string[] = [];
  try {
    new Model(object).validate();
  } catch (error) {
    problems.push(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const version = object.apiVersion.split('/').pop()!;
  const typeName = `${version[0]!.toUpperCase()}${version.slice(1)}${object.kind}`;
  problems.push(...unknownFields(object, typeName, where));
  return problems;
}
