import type { z } from 'zod';
import { CairnError } from './problem.js';

/** Converts a zod failure into cairn.validation.invalid_body with one message per offending field. */
export function validationError(issues: ReadonlyArray<z.core.$ZodIssue>, what = 'request body'): CairnError {
  const errors = issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(root)',
    message: issue.message,
  }));
  const summary = errors.map((e) => `${e.path}: ${e.message}`).join('; ');
  return new CairnError('cairn.validation.invalid_body', `Invalid ${what}: ${summary}`, { errors });
}

/** Parses with a zod schema and returns the value, or throws the validation problem. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what?: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(result.error.issues, what);
  return result.data;
}
