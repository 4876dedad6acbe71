import { Router } from 'express';
import { jobUrl } from '@cairn/config';
import { absentAsUndefined, CairnError } from '@cairn/errors';
import { isoTimestamp, jobStates, type signerV1, type verifierV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { requireScope } from '../auth.js';
import { presentSignResult } from '../../domain/sign-result.js';
import { presentVerification } from './verify.js';
import { jobSchema } from '../openapi/responses.js';
import { EXAMPLE, json, needsKey, NOT_FOUND, operationsOf, SIGN_RESULT_EXAMPLE } from '../openapi/describe.js';

export const operations = operationsOf('Jobs', needsKey('read'), {
  getJob: {
    route: 'get /v1/jobs/:job_id',
    summary: 'Poll a sign or verify job',
    answers: [
      json(
        200,
        'The job',
        {
          job_id: EXAMPLE.job,
          kind: 'sign',
          status: 'done',
          poll_url: `https://cairn.example/v1/jobs/${EXAMPLE.job}`,
          ...SIGN_RESULT_EXAMPLE,
          attempts: 1,
          created_at: EXAMPLE.time,
          updated_at: EXAMPLE.time,
        },
        jobSchema,
      ),
    ],
    errors: NOT_FOUND,
  },
});

/**
 * `GET /v1/jobs/{job_id}`: one address for every asynchronous job, a sign (the signer's) or a verify (the
 * verifier's); each service answers only for the caller's tenant.
 */
export function jobRoutes(deps: {
  signer: ClientOf<typeof signerV1.SignerService>;
  verifier: ClientOf<typeof verifierV1.VerifierService>;
  publicBaseUrl: string;
}): Router {
  const router = Router();

  router.get('/v1/jobs/:job_id', requireScope('read'), async (req, res) => {
    const tenantId = req.auth!.tenant.tenantId;
    const jobId = String(req.params.job_id);
    // The signer answers not_found for a job that is not one of its signs; the verifier then looks among its verifies.
    const signJob = await deps.signer.getJob({ tenantId, jobId }).then((r) => r.job, absentAsUndefined);
    const verifyJob = signJob
      ? undefined
      : await deps.verifier.getVerifyJob({ tenantId, jobId }).then((r) => r.job, absentAsUndefined);
    const job = signJob ?? verifyJob;
    if (!job) throw new CairnError('cairn.not_found', `Job ${jobId} not found.`);
    // A done sign job carries the Sign result's fields (the spec's Job); a done verify job carries the Verification
    // result under `result`, whose own `status` (the verdict) would otherwise clash with the job's.
    const status = jobStates.fromProto(job.status);
    const done =
      status !== 'done'
        ? {}
        : signJob?.result
          ? presentSignResult(signJob.result)
          : verifyJob?.result
            ? { result: presentVerification(verifyJob.result) }
            : {};
    res.json({
      job_id: job.jobId,
      kind: signJob ? 'sign' : 'verify',
      status,
      poll_url: jobUrl(deps.publicBaseUrl, job.jobId),
      ...done,
      ...(status === 'failed' && job.problemJson ? { problem: JSON.parse(job.problemJson) as unknown } : {}),
      attempts: job.attempts,
      // How far a sign's current run is (its worker writes it at most every 500 ms); absent before it reports.
      ...(signJob?.progress
        ? {
            progress: {
              stage: signJob.progress.stage,
              fraction: signJob.progress.fraction,
              updated_at: isoTimestamp(signJob.progress.updatedAt),
            },
          }
        : {}),
      created_at: isoTimestamp(job.createdAt),
      updated_at: isoTimestamp(job.updatedAt),
    });
  });

  return router;
}
