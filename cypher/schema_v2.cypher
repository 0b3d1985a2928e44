// Schema version 2: the key of the per-user counter node (GraphmemUser: see
// create_entries.cypher). Idempotent (IF NOT EXISTS), like every migration.
// The write that first counts a user creates its node, under the user's lock; a user
// without one (a store written before version 2, until its next write) is counted by
// the searches themselves (term_stats.cypher). So this migration only adds the index that
// finds the node in one seek, and copies nothing.
CREATE CONSTRAINT graphmem_v2_user_key IF NOT EXISTS
FOR (u:GraphmemUser) REQUIRE (u.app_name, u.user_id) IS UNIQUE;
