-- Policies bind the owning role too (the service connects as the owner), so nothing reads or writes a
-- tenant's counters, spend, reservations, quotas or alert markers without that tenant set.
ALTER TABLE "billing"."counters" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "billing"."spend" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "billing"."reservations" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "billing"."quotas" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "billing"."alerts" FORCE ROW LEVEL SECURITY;
