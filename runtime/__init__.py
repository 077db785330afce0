"""kubetrio's framework: work queue, rate limiters, client, informers, controllers, manager."""
