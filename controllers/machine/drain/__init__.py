"""Node drain with MCM's semantics (``pkg/util/provider/drain``), minus the defects its own
authors flagged: no lost VolumeAttachment events, event-driven waits, one deadline for all."""
