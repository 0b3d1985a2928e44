// Schema version 4: NEXT also links the entries on either side of a run of reactions
// ("haha", "lol": graphmem._service.next_pairs). Its data step runs before it
// (Neo4jMemoryService._link_across_reactions): the links of a store written before.
// The index marks the step done, and finds a session's last entries in position order
// (session_tail.cypher). Idempotent (IF NOT EXISTS).
CREATE INDEX graphmem_v4_entry_session_position IF NOT EXISTS
FOR (e:Entry) ON (e.app_name, e.user_id, e.session_id, e.position);
