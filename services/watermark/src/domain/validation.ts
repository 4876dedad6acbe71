import { CairnError } from '@cairn/errors';
import { isId, type IdKind } from '@cairn/ids';

function invalid(detail: string, path: string): CairnError {
  return new CairnError('cairn.validation.invalid_body', detail, { errors: [{ path, message: detail }] });
}

export function requireId(kind: IdKind, value: string, field: string): string {
  const article = /^[aeiou]/.test(kind) ? 'an' : 'a';
  if (!isId(kind, value))
    throw invalid(`${field} must be ${article} ${kind} id, got ${JSON.stringify(value.slice(0, 64))}`, field);
  return value;
}
