// Create Entry nodes; each row holds exactly the properties of entry_properties().
UNWIND $entries AS properties
CREATE (e:Entry)
SET e = properties
