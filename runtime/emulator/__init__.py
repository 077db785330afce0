"""An in-process Kubernetes API server emulator for tests and the embedded default.

``async with serve_emulator() as emu:`` serves it on 127.0.0.1 inside the caller's trio run;
``kubetrio emulator`` runs it standalone. See DESIGN §5.
"""

from kubetrio.runtime.emulator.faults import Counters, FaultRule, Faults
from kubetrio.runtime.emulator.server import Emulator, EmulatorOptions, serve_emulator

__all__ = ["Counters", "Emulator", "EmulatorOptions", "FaultRule", "Faults", "serve_emulator"]
