"""Drop-in faces of other libraries' APIs over htmlstream's own: :mod:`htmlstream.compat.nh3`
(nh3, the Python binding of ammonia)."""
