// The ids of every entry of one app and user (every project): what an erasure deletes.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
RETURN collect(e.id) AS ids
