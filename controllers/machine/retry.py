"""MCM's reconcile retry periods (``machineutils.RetryPeriod``, v0.51+).

The machine controllers return them as ``Result(requeue_after=...)`` and cap their rate
limiters' backoff at ``ShortRetry``; they never go through a rate limiter themselves. They are
MCM's numbers, so operators who know MCM see the same timing here.
"""

from __future__ import annotations

ShortRetry = 5.0
MediumRetry = 180.0
LongRetry = 600.0
