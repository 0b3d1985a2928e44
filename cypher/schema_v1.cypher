// Schema version 1. Every statement is idempotent (IF NOT EXISTS); object names carry
// the version, which is how ensure_schema() knows a version is in place.
// Community edition has no NODE KEY: multi-property uniqueness constraints give the same
// lookup index and the same guarantee for nodes that always carry all the properties.
CREATE CONSTRAINT graphmem_v1_entry_id IF NOT EXISTS
FOR (e:Entry) REQUIRE e.id IS UNIQUE;
CREATE CONSTRAINT graphmem_v1_token_key IF NOT EXISTS
FOR (t:Token) REQUIRE (t.app_name, t.user_id, t.value) IS UNIQUE;
CREATE CONSTRAINT graphmem_v1_entity_key IF NOT EXISTS
FOR (n:Entity) REQUIRE (n.app_name, n.user_id, n.name) IS UNIQUE;
// A composite index holds only nodes that have every property: entries without a session
// or a project are missing from the next two, so the owner index is needed as well.
CREATE INDEX graphmem_v1_entry_owner IF NOT EXISTS
FOR (e:Entry) ON (e.app_name, e.user_id);
CREATE INDEX graphmem_v1_entry_session IF NOT EXISTS
FOR (e:Entry) ON (e.app_name, e.user_id, e.session_id);
CREATE INDEX graphmem_v1_entry_project IF NOT EXISTS
FOR (e:Entry) ON (e.app_name, e.user_id, e.project_id);
// The key that serialises writes. Version 1 locked each session (scope: the project id, or
// '' for global memory); since then every write locks its whole user with the key whose
// scope and session_id are both '' (see lock_user.cypher), which this constraint covers.
CREATE CONSTRAINT graphmem_v1_session_lock IF NOT EXISTS
FOR (l:GraphmemSessionLock) REQUIRE (l.app_name, l.user_id, l.scope, l.session_id) IS UNIQUE;
