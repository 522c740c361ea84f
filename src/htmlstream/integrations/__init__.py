"""Integrations of htmlstream with web frameworks, servers and HTTP clients.

Each module adapts one library (imported by that module only, an optional extra of the package:
``pip install htmlstream[aiohttp]``, ``[httpx]``...) to :mod:`htmlstream.http`, the sans-I/O
layer that decides whether a response is rewritten and transforms its body.  The modules own the
I/O, backpressure and error handling; they never decide on their own.
"""
