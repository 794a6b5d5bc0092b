-- The audience of an OAuth access token (RFC 8707, docs/oauth.md#resource-indicators): the resource
-- its authorization named, checked on every request the token makes. NULL: the token names no
-- resource and is good for the whole server, as every token issued before this migration.
ALTER TABLE "oauth_records" ADD COLUMN "audience" TEXT;
