# cython: language_level=3
"""ASCII helpers shared by the engine's modules (inline: no call cost)."""


cdef inline bint ascii_lower_equals(const unsigned char* p, const unsigned char* q,
                                    Py_ssize_t n) noexcept:
    """Whether p[:n], ASCII-lower-cased, equals q[:n] (q is lower-case already)."""
    cdef Py_ssize_t i
    cdef unsigned char c
    for i in range(n):
        c = p[i]
        if 0x41 <= c <= 0x5A:
            c |= 0x20
        if c != q[i]:
            return False
    return True
