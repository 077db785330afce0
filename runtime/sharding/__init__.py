"""Horizontal sharding of controllers across replicas: a consistent-hash ring of shard Leases,
the labels that assign objects to shards, the sharder that keeps them, and the shard side that
caches and reconciles only its own objects (see docs/how-to/sharding.md)."""
