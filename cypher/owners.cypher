// Every owner (app, user) that holds an entry: schema version 4's data step visits each.
MATCH (e:Entry)
RETURN DISTINCT e.app_name AS app_name, e.user_id AS user_id
