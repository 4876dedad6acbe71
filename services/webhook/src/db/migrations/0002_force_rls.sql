-- The service connects as the tables' owner; FORCE makes the policies bind the owner too, so no query of the
-- service sees a tenant's endpoints, deliveries or attempts without that tenant (or the dispatcher's narrow
-- setting) in force.
ALTER TABLE "webhook"."endpoints" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "webhook"."deliveries" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "webhook"."attempts" FORCE ROW LEVEL SECURITY;
