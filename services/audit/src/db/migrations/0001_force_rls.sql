-- Policies bind the owning role too (the service connects as the owner), so nothing reads a tenant's
-- audit entries without that tenant set.
ALTER TABLE "audit"."entries" FORCE ROW LEVEL SECURITY;
