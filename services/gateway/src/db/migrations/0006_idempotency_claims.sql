ALTER TABLE "gateway"."onboarding_requests" ADD COLUMN "state" text DEFAULT 'done' NOT NULL;--> statement-breakpoint
ALTER TABLE "gateway"."onboarding_requests" ADD COLUMN "claim_id" text;--> statement-breakpoint
ALTER TABLE "gateway"."onboarding_requests" ADD COLUMN "lease_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "gateway"."sign_requests" ADD COLUMN "state" text DEFAULT 'done' NOT NULL;--> statement-breakpoint
ALTER TABLE "gateway"."sign_requests" ADD COLUMN "claim_id" text;--> statement-breakpoint
ALTER TABLE "gateway"."sign_requests" ADD COLUMN "lease_expires_at" timestamp with time zone;