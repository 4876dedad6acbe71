-- The tables the gateway kept tenants in before the tenant service. A release before this one imported their rows
-- (`pnpm cairn admin import-gateway-tenants`, which empties them); this one no longer can, so it refuses to drop a
-- tenant that was never imported: the migration fails, the gateway does not start, and nothing is lost.
-- The rows are read as the import read them (FORCE row-level security binds the owner this runs as too).
DO $$
BEGIN
  PERFORM set_config('cairn.system', 'tenant-handover', true);
  IF EXISTS (SELECT 1 FROM "gateway"."tenants") THEN
    RAISE EXCEPTION 'gateway.tenants still holds tenants from before the tenant service, never imported: run `pnpm cairn admin import-gateway-tenants` with the previous Cairn release first (docs/operations.md, "Upgrading"), then start this gateway again';
  END IF;
  PERFORM set_config('cairn.system', '', true);
END $$;--> statement-breakpoint
DROP TABLE "gateway"."api_keys" CASCADE;--> statement-breakpoint
DROP TABLE "gateway"."onboarding_requests" CASCADE;--> statement-breakpoint
DROP TABLE "gateway"."recipes" CASCADE;--> statement-breakpoint
DROP TABLE "gateway"."tenants" CASCADE;
