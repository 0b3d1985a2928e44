// Erase one app and user: entries, then tokens, then entities, in batches (a user can be
// too big for one transaction). Run in auto-commit transactions: CALL ... IN TRANSACTIONS
// is not allowed inside a managed one. Each statement can be re-run after a failure.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
CALL (e) {
  DETACH DELETE e
} IN TRANSACTIONS OF 1000 ROWS
RETURN count(*) AS removed;
MATCH (t:Token {app_name: $app_name, user_id: $user_id})
WHERE t.value IS NOT NULL
CALL (t) {
  DETACH DELETE t
} IN TRANSACTIONS OF 5000 ROWS
RETURN count(*) AS removed;
MATCH (n:Entity {app_name: $app_name, user_id: $user_id})
WHERE n.name IS NOT NULL
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF 5000 ROWS
RETURN count(*) AS removed;
