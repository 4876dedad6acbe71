-- The service connects as the tables' owner; FORCE makes the policies bind the owner too, so no query of the
-- service can see a tenant's rows without that tenant set (only a superuser or BYPASSRLS role could).
ALTER TABLE "gateway"."tenants" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "gateway"."api_keys" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "gateway"."onboarding_requests" FORCE ROW LEVEL SECURITY;
