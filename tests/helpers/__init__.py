"""What more than one test module needs: builders, harnesses and child-process runners.

Tests import these as ``tests.helpers.<module>`` (the repository root is on ``sys.path``: the
``pythonpath`` setting in pyproject.toml), never from one another's ``test_*.py``, so moving or
deleting a test never breaks a second one. Shared fixtures are in ``tests/conftest.py``.
"""
