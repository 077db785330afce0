"""The manager: one nursery for the clusters (client and cache), controllers, runnables, leader
election, the metrics and webhook servers; controllers found by name; signals and GC tuning
for a long-running process."""
