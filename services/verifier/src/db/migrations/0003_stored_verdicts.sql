ALTER TABLE "verifier"."results" ADD COLUMN "trust_digest" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "verifier"."results" ADD COLUMN "anchor_settled" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "verifier"."results" ADD COLUMN "stale" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- Until now a verify of anybody's upload could overwrite an asset's stored verdict: recompute every kept one.
UPDATE "verifier"."results" SET "stale" = true;
