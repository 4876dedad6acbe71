-- The service connects as the table's owner; FORCE makes the policies bind the owner too.
ALTER TABLE "softbinding"."fingerprints" FORCE ROW LEVEL SECURITY;
