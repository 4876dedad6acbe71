-- Policies bind the owning role too (the service connects as the owner): no tenant's leaves are read
-- without that tenant (or the batcher's system setting) in force.
ALTER TABLE "anchor"."leaves" FORCE ROW LEVEL SECURITY;
