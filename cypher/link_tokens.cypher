// Link new entries to their Token nodes, creating the tokens that do not exist yet. One
// row per token with the ids of the entries that hold it: each token is merged once.
// Rows arrive sorted by token value, so concurrent writers lock shared tokens in the same
// order (fewer deadlocks). MERGE, not MATCH: a token a concurrent delete just removed
// as an orphan is created again instead of silently losing the link.
// link.speaker: the token is a word of one of those entries' author (Token.speaker turns
// true and stays so: see graphmem.backends._graph_model); link.user_speaker: and that
// entry has the role "user" (Token.user_speaker, likewise).
UNWIND $lists.links AS link
MERGE (t:Token {app_name: $app_name, user_id: $user_id, value: link.value})
SET t.speaker = coalesce(t.speaker, false) OR link.speaker,
    t.user_speaker = coalesce(t.user_speaker, false) OR link.user_speaker
WITH t, link
UNWIND link.entry_ids AS entry_id
MATCH (e:Entry {id: entry_id})
CREATE (e)-[:HAS_TOKEN]->(t)
