// The ids of every entry of one app and user (every project): what an erasure deletes,
// each with its write's stamp (-1 for an entry written before stamps), so that a later
// batch deletes that entry and not one a write stored under the same id meanwhile.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
RETURN collect(e.id) AS ids, collect(coalesce(e.written, -1)) AS written
