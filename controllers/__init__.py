"""kubetrio's built-in controllers: machine (MCM port), nodedelete and storagegc."""
