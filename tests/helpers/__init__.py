"""What more than one test module needs: builders, harnesses, process runners and fixtures.

Tests import these as ``tests.helpers.<module>`` (the repository root is on ``sys.path``: the
``pythonpath`` setting in pyproject.toml), never from one another's ``test_*.py``, so moving or
deleting a test never breaks a second one. ``kube`` also holds the emulator fixtures
(``emu``, ``client``, ``kube``, ``kubectl``), registered for every test by ``tests/conftest.py``.
"""
