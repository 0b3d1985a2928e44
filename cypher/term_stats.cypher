// The statistics a search plans its gathering with (see graphmem._gathering):
//   entry_count  all the owner's entries (every project): the N of the idf
//   token_df     [token, degree of its node, whether it is a word of a speaker's name]
//   entity_df    [name, degree] for the query's entities
// As term_stats_or_gather.cypher reports them.
// N is the owner's counter (create_entries.cypher): one seek. Only a user written before
// the counter existed, and not since, is counted entry by entry.
CALL () {
  OPTIONAL MATCH (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
  // CASE runs the count only without a counter (a WHERE before a MATCH would not: the
  // planner seeks first and filters after).
  RETURN CASE WHEN c IS NULL THEN COUNT { MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) } ELSE c.entries END
           AS entry_count
}
CALL () {
  UNWIND $lists.tokens AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  USING INDEX SEEK t:Token(app_name, user_id, value)
  RETURN collect([value, COUNT { (t)<-[:HAS_TOKEN]-() }, t.speaker]) AS token_df
}
CALL () {
  UNWIND $lists.entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  USING INDEX SEEK n:Entity(app_name, user_id, name)
  RETURN collect([name, COUNT { (n)<-[:MENTIONS]-() }]) AS entity_df
}
RETURN entry_count, token_df, entity_df
