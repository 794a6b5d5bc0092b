-- Provenance of a credential: the agents on whose authority an API key or an OAuth client was made
-- (the creating token's agent, and whatever agents the creating key or client was itself made on),
-- so that an agent's killswitch ends them with it (docs/oauth.md#the-killswitch). Empty for what an
-- agent had no part in. No foreign key: an array cannot have one; the killswitch revokes or deletes
-- the rows in its transaction, and a creation locks the agents it names (src/store/agents.ts).
ALTER TABLE "api_keys" ADD COLUMN "made_by_agents" TEXT[] COLLATE "C" NOT NULL DEFAULT '{}';
ALTER TABLE "oauth_clients" ADD COLUMN "made_by_agents" TEXT[] COLLATE "C" NOT NULL DEFAULT '{}';
