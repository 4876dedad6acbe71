-- The service connects as the table's owner; FORCE makes the policies bind the owner too, so no query of the
-- service can see a tenant's marks without that tenant (or the one payload being looked up) set.
ALTER TABLE "watermark"."marks" FORCE ROW LEVEL SECURITY;
