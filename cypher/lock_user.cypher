// Serialise every write of one app and user, across processes: MERGE on a unique key waits
// while another transaction holds that key, until it commits. Every write transaction runs
// this first, so a user's writes (adds, replacements, deletes, each batch of an erasure)
// happen one at a time while different users' writes run in parallel, and no write ever
// sees another's half-done work: a term checked as orphaned stays so until the deleting
// transaction commits. One lock per transaction, taken before anything else: no deadlock.
//
// The key is schema v1's GraphmemSessionLock constraint with an empty scope and session
// ('' is never a session id), so it needs no schema migration. The node is deleted again in
// the same transaction, so it is never committed: an erased user leaves no lock node behind
// (the only node of a user besides its Entry, Token and Entity nodes is its counter,
// GraphmemUser, deleted with its last entry: see create_entries.cypher).
MERGE (lock:GraphmemSessionLock {app_name: $app_name, user_id: $user_id, scope: '', session_id: ''})
DELETE lock
