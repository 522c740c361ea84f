# Tag-name hashing (DESIGN principle 5): case-folded ASCII letters and digits 1-6, packed 5 bits
# each into a 64-bit integer, so that tag names compare as integers.
#
# Digits 1-6 take codes 0-5 and letters 6-31.  Tag names always start with a letter (code >= 6),
# so leading zero codes cannot make two names collide.  Twelve symbols always fit; a thirteenth
# fits while the top five bits are still zero (``foreignobject`` does).  Any other byte, or an
# overflow, makes the hash INVALID_HASH and callers fall back to comparing bytes.
from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #include "hs_portable.h"
    #define HS_EMPTY_HASH ((uint64_t)0)
    #define HS_INVALID_HASH (~(uint64_t)0)
    HS_INLINE uint64_t hs_hash_update(uint64_t h, unsigned char c) {
        uint64_t code;
        if (h >> 59) return HS_INVALID_HASH;
        if (c >= 'a' && c <= 'z') code = (uint64_t)(c - 'a') + 6;
        else if (c >= 'A' && c <= 'Z') code = (uint64_t)(c - 'A') + 6;
        else if (c >= '1' && c <= '6') code = (uint64_t)(c - '1');
        else return HS_INVALID_HASH;
        return (h << 5) | code;
    }
    """
    uint64_t EMPTY_HASH "HS_EMPTY_HASH"
    uint64_t INVALID_HASH "HS_INVALID_HASH"
    uint64_t hash_update "hs_hash_update"(uint64_t h, unsigned char c) noexcept nogil


cdef inline uint64_t hash_bytes(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = EMPTY_HASH
    cdef Py_ssize_t i
    for i in range(n):
        h = hash_update(h, p[i])
    return h
