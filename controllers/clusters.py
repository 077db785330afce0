"""The clusters MCM's controllers work in, by the name a manager knows them under.

MCM keeps Machines, MachineClasses and their Secrets in the control cluster (the manager's
primary cluster, which also holds the leader-election Lease) and works on Nodes, Pods, volumes,
VolumeAttachments, evictions and bootstrap tokens in the target cluster, the one the machines
join. ``manager.cluster(TARGET)`` is the primary cluster when no separate target was added, so
one kubeconfig for both (the default) needs nothing else.
"""

from __future__ import annotations

from typing import Final

TARGET: Final = "target"
