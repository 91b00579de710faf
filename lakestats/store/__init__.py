"""The object-store layout, the three files' schemas, manifests and lookups."""
