-- The service role owns these tables; FORCE makes their policies bind it too.
ALTER TABLE "signer"."assets" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "signer"."manifests" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "signer"."jobs" FORCE ROW LEVEL SECURITY;
