# cython: language_level=3
"""ASCII byte helpers shared by the engine's modules (inline: no call cost)."""


cdef inline unsigned char lower(unsigned char c) noexcept nogil:
    """``c`` with an ASCII upper-case letter lower-cased."""
    if c >= 0x41 and c <= 0x5A:
        return c | 0x20
    return c


cdef inline bint is_alpha(unsigned char c) noexcept nogil:
    return (c | 0x20) >= 0x61 and (c | 0x20) <= 0x7A


cdef inline bint is_alnum(unsigned char c) noexcept nogil:
    return is_alpha(c) or (c >= 0x30 and c <= 0x39)


cdef inline bint ascii_lower_equals(const unsigned char* p, const unsigned char* q,
                                    Py_ssize_t n) noexcept nogil:
    """Whether p[:n], ASCII-lower-cased, equals q[:n] (q is lower-case already)."""
    cdef Py_ssize_t i
    for i in range(n):
        if lower(p[i]) != q[i]:
            return False
    return True


cdef inline str ascii_lower(str s):
    """``s`` with its ASCII upper-case letters lower-cased and nothing else (names compare
    ASCII case-insensitively: the Kelvin sign or a dotted capital I stay as they are).  The
    engine's one ASCII lower-case rule for str (``lower`` above is the one for bytes)."""
    if s.isascii():
        return s.lower()    # (for ASCII, exactly the 26 letters; faster than a table)
    return "".join([chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s])
