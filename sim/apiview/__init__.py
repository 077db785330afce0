"""The simulated world as a client of any API server: what its controllers read is a mirror
kept by list and watch, and what they write goes out behind the pass, through the API only.

``ApiObjects`` is the ``Objects`` the simulated cluster, cloud and storage service run on
outside the emulator (``kubetrio simulate``, or any API server in tests)::

    objects = ApiObjects(client)
    async with trio.open_nursery() as nursery:
        await nursery.start(objects.run)   # listed: every pass from here reads a full mirror
        nursery.start_soon(SimulatedCluster(objects, ClusterSimulation()).run)
"""

from kubetrio.sim.apiview.objects import ApiObjects

__all__ = ["ApiObjects"]
