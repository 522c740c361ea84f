# cython: language_level=3
"""ASCII byte helpers shared by the engine's modules (inline: no call cost)."""


cdef inline unsigned char lower(unsigned char c) noexcept nogil:
    """``c`` with an ASCII upper-case letter lower-cased."""
    if c >= 0x41 and c <= 0x5A:
        return c | 0x20
    return c


cdef inline bint name_word(const unsigned char* q, Py_ssize_t n, unsigned long long* word,
                           unsigned long long* mask) noexcept nogil:
    """For a name of one to eight bytes: ``word``, its bytes ASCII-lower-cased (the first one
    lowest, as hs_load_le64 reads them), and ``mask``, the 0x20 bit of each of its letters.  n
    bytes at p equal the name ASCII-case-insensitively exactly when
    ``(load_le64(p) & low_bytes(n)) | mask == word`` (at a letter's place OR 0x20 finds both
    cases, elsewhere the bytes must be equal).  False for other lengths."""
    cdef Py_ssize_t i
    cdef unsigned char c
    if n < 1 or n > 8:
        return False
    word[0] = 0
    mask[0] = 0
    for i in range(n):
        c = lower(q[i])
        word[0] |= (<unsigned long long>c) << (8 * i)
        if c >= 0x61 and c <= 0x7A:
            mask[0] |= (<unsigned long long>0x20) << (8 * i)
    return True


cdef inline unsigned long long low_bytes(Py_ssize_t n) noexcept nogil:
    """The mask of a word's first ``n`` bytes (1 to 8) in hs_load_le64 order."""
    return ~(<unsigned long long>0) if n >= 8 else ((<unsigned long long>1) << (8 * n)) - 1


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
