"""The manager: one nursery for the clusters (client and cache), controllers, runnables, leader
election, the metrics and webhook servers; controllers found by name; signals, GC and allocator
tuning for a long-running process."""
